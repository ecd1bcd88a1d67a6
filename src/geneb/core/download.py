"""A pooch downloader with an overall deadline per file, not only a per-read timeout.

`requests`' timeout bounds each socket read: a server that sends one byte every few seconds restarts it with every
byte and holds a download open for ever. `DeadlineDownloader` streams the body with `read1` (one socket read per
call, so a trickle of bytes returns as it arrives) and stops the download once `deadline_s` seconds of wall-clock
time have passed since the request was sent, raising `DownloadDeadlineError` naming the URL, the bytes received and
the limit. A download therefore ends within `deadline_s` plus at most one read timeout (`read_timeout_s`, itself
never longer than the deadline).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

#: default overall limit of one file's download, seconds (config `task_download.deadline_s`)
DEFAULT_DEADLINE_S = 1800.0
#: default limit of one socket read (and of connecting), seconds
DEFAULT_READ_TIMEOUT_S = 30.0
#: bytes asked for per read
_CHUNK = 1 << 16


class DownloadDeadlineError(TimeoutError):
    """A download that did not finish within its overall deadline (the message names URL, bytes and limit)."""


@dataclass(frozen=True)
class DeadlineDownloader:
    """A pooch downloader (`pooch.retrieve(..., downloader=DeadlineDownloader(...))`) over `requests` with an
    overall wall-clock limit per file. deadline_s: seconds from sending the request to the last byte (> 0).
    read_timeout_s: seconds one connect or socket read may wait (capped at deadline_s). Raises
    `requests.HTTPError` for an HTTP error status (its text names the status, e.g. 404, as pooch's own downloader
    does) and DownloadDeadlineError when the deadline passes."""

    deadline_s: float = DEFAULT_DEADLINE_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.deadline_s > 0 or not self.read_timeout_s > 0:
            raise ValueError(
                f"download deadline and read timeout must be > 0 s, got {self.deadline_s}, {self.read_timeout_s}"
            )

    def __call__(self, url: str, output_file: Any, pooch: Any, check_only: bool = False) -> bool | None:
        """Download `url` into `output_file` (a path or a binary file object); with `check_only`, only whether
        the server has it (HTTP HEAD, status 200). The signature is pooch's downloader protocol."""
        import requests

        timeout = min(self.read_timeout_s, self.deadline_s)
        if check_only:
            head = requests.head(url, timeout=timeout, allow_redirects=True)
            return bool(head.status_code == 200)
        start = time.monotonic()
        received = 0
        is_path = not hasattr(output_file, "write")
        out = open(output_file, "w+b") if is_path else output_file  # noqa: SIM115 - closed in finally
        try:
            with requests.get(url, timeout=timeout, stream=True) as response:
                response.raise_for_status()
                while True:
                    if time.monotonic() - start > self.deadline_s:
                        raise DownloadDeadlineError(self._message(url, received, start))
                    block = response.raw.read1(_CHUNK, decode_content=True)
                    if not block:  # read1 returns b"" only at the end of the body
                        break
                    out.write(block)
                    received += len(block)
        except (DownloadDeadlineError, requests.HTTPError):
            raise
        except Exception as exc:  # a read that timed out past the deadline (urllib3's ReadTimeoutError) is the deadline
            if time.monotonic() - start > self.deadline_s:
                raise DownloadDeadlineError(self._message(url, received, start)) from exc
            raise
        finally:
            if is_path:
                out.close()
        return None

    def _message(self, url: str, received: int, start: float) -> str:
        return (
            f"download of {url} did not finish within its deadline of {self.deadline_s:g} s "
            f"({received:,} bytes received in {time.monotonic() - start:.1f} s); a slow or stalled server. Raise "
            "`task_download.deadline_s` in the config if the file is large and the server slow"
        )
