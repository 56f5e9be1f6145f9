"""A minimal GitHub REST client for the review bot (urllib only).

The token is sent in the ``Authorization`` header and never appears in a message, exception or log
line this module produces (``GitHubError`` texts are scrubbed).
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request

API_VERSION = "2022-11-28"


class GitHubError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class GitHub:
    def __init__(self, api_url: str, token: str, repository: str, timeout: float = 30.0):
        self.api = api_url.rstrip("/")
        self._token = token
        self.repo = repository
        self.timeout = timeout

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def request(self, method: str, path: str, body=None):
        url = path if path.startswith("http") else f"{self.api}{path}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", API_VERSION)
        req.add_header("User-Agent", "mpslint-review")
        if self._token:
            req.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                link = resp.headers.get("Link", "")
                return (json.loads(raw) if raw else None), link
        except urllib.error.HTTPError as e:
            try:
                detail = json.loads(e.read() or b"{}").get("message", "")
            except (ValueError, AttributeError):
                detail = ""
            raise GitHubError(e.code, self._scrub(f"{method} {url}: HTTP {e.code}" + (f": {detail}" if detail else ""))) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise GitHubError(0, self._scrub(f"{method} {url}: {getattr(e, 'reason', e)}")) from None

    def paginate(self, path: str, per_page: int = 100, max_pages: int = 50) -> list:
        out: list = []
        url = f"{path}{'&' if '?' in path else '?'}per_page={per_page}"
        for _ in range(max_pages):
            items, link = self.request("GET", url)
            out.extend(items or [])
            m = re.search(r'<([^>]+)>;\s*rel="next"', link or "")
            if not m or not self._same_origin(m.group(1)):
                break  # never send the token to another host a Link header names
            url = m.group(1)
        return out

    def _same_origin(self, url: str) -> bool:
        from urllib.parse import urlsplit

        a, b = urlsplit(self.api), urlsplit(url)
        return (a.scheme, a.netloc) == (b.scheme, b.netloc)

    def review_comments(self, pr: int) -> list:
        return self.paginate(f"/repos/{self.repo}/pulls/{pr}/comments")

    def reviews(self, pr: int) -> list:
        return self.paginate(f"/repos/{self.repo}/pulls/{pr}/reviews")

    def create_review(self, pr: int, payload: dict) -> dict:
        result, _ = self.request("POST", f"/repos/{self.repo}/pulls/{pr}/reviews", payload)
        return result or {}


def pr_from_event(event_path: str | None) -> tuple[int | None, str | None]:
    """(pull request number, head sha) from ``$GITHUB_EVENT_PATH``."""
    if not event_path or not os.path.isfile(event_path):
        return None, None
    try:
        with open(event_path, encoding="utf-8") as fh:
            event = json.load(fh)
    except (OSError, ValueError):
        return None, None
    pr = event.get("pull_request") or {}
    number = pr.get("number") or event.get("number")
    head = (pr.get("head") or {}).get("sha")
    return (int(number) if number else None), head
