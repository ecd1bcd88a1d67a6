"""docs/zeroshot.md's own-variant recipe, run as written on a small FASTA and two VCFs: it writes a valid task,
and a VCF whose REF disagrees with the genome is refused with the window's base named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from geneb.zeroshot.task import ZeroShotTaskError

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "zeroshot.md"
CHROM = "ACGT" * 100 + "TTTTGGGGCCCCAAAA" * 10  # 560 bases


def block() -> str:
    (code,) = re.findall(r"<!-- run: own-variants -->\n```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return code


def write_inputs(folder: Path, ref_at_100: str) -> None:
    (folder / "genome.fa").write_text(f">chr1 test\n{CHROM[:300]}\n{CHROM[300:]}\n>chr2\n{CHROM.lower()}\n")
    header = "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
    # 1-based positions: 101 is CHROM[100] = "A"; 410 is CHROM[409] (in the TTTTGGGG... stretch)
    (folder / "effects.vcf").write_text(header + f"chr1\t101\t.\t{ref_at_100}\tG\t.\t.\t.\nchr2\t5\t.\tA\tC\t.\t.\t.\n")
    (folder / "controls.vcf").write_text(
        header + f"chr1\t410\t.\t{CHROM[409]}\tA\t.\t.\t.\nchr1\t20\t.\tAC\tA\t.\t.\t.\n"
    )


def test_the_recipe_writes_a_valid_task(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path, "A")
    exec(compile(block(), str(DOC), "exec"), {})
    from geneb.zeroshot.task import read_zeroshot_task

    task = read_zeroshot_task(tmp_path / "my_zeroshot" / "my_variants")
    assert task.n == 3 and task.rows["label"].tolist() == [1, 1, 0]  # the indel is skipped by the recipe
    first = task.rows.iloc[0]
    assert first["pos"] == 100 and first["sequence"] == CHROM[: 100 + 257] and first["ref"] == "A"
    assert task.rows.iloc[1]["sequence"] == CHROM[: 4 + 257].upper()  # soft-masked chr2 upper-cased by the recipe
    assert str(task.n) in capsys.readouterr().out


def test_a_ref_that_disagrees_with_the_genome_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path, "T")
    with pytest.raises(ZeroShotTaskError, match="row 0: ref 'T' does not match the window at pos 100, which has 'A'"):
        exec(compile(block(), str(DOC), "exec"), {})
