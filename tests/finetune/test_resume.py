"""A killed fine-tune job resumes from its last completed epoch and ends with the scores of an uninterrupted run;
the same seed gives the same scores (CPU, one thread)."""

from __future__ import annotations

import pandas as pd
import pytest

COLS = ["regime", "seed", "metric", "value", "ci_low", "ci_high", "n_iter"]


class Killed(RuntimeError):
    pass


def _mcc(scores):
    return scores[scores["metric"] == "MCC"][COLS].reset_index(drop=True)


def test_resume_after_a_kill_gives_the_uninterrupted_scores(run_job, recipe_settings, tmp_path):
    full = _mcc(run_job(recipe_settings, scratch=tmp_path / "a"))
    again = _mcc(run_job(recipe_settings, scratch=tmp_path / "b"))
    pd.testing.assert_frame_equal(full, again)  # deterministic under the seed

    seen = []

    def kill(cell, epoch):
        seen.append((cell, epoch))
        if "10shot/seed 13" in cell and epoch == 1:
            raise Killed(cell)

    with pytest.raises(Killed):
        run_job(recipe_settings, scratch=tmp_path / "c", on_epoch_end=kill)
    assert (tmp_path / "c" / "10shot-13.ckpt.pt").exists()  # epoch 1's checkpoint
    assert (tmp_path / "c" / "full-13.result.pt").exists()  # finished cells are kept

    resumed_epochs = []
    resumed = run_job(recipe_settings, scratch=tmp_path / "c", on_epoch_end=lambda c, e: resumed_epochs.append((c, e)))
    # the full-regime cells are not retrained; the killed cell restarts at epoch 2
    assert not any("/full/" in c for c, _ in resumed_epochs)
    assert [e for c, e in resumed_epochs if "10shot/seed 13" in c] == [2]
    pd.testing.assert_frame_equal(full, _mcc(resumed))
