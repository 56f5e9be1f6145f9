"""``mpslint review``: the create-review payload, and ``--post`` against a local server playing GitHub."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.review.payload import MARK_RE, SUMMARY_MARKER

from ._integration_helpers import chdir, commit_all, git, init_repo

TOKEN = "ghs_s3cr3t-t0ken-value"
BAD = "  const uint32_t n = static_cast<uint32_t>(in.numel());\n"
IMPLICIT = "  uint32_t rows = in.size(0) * in.size(1); launch(rows);\n"
HOST = (
    "#include <torch/extension.h>\n\nvoid k(dispatch_queue_t q, const at::Tensor& t) {\n"
    "  dispatch_sync(q, ^() {\n    TORCH_CHECK(t.dim() > 0, \"k: a scalar\");\n  });\n}\n"
)


class FakeGitHub:
    """A threading HTTP server on 127.0.0.1 that answers like GitHub's pull request review API and records requests."""

    def __init__(self):
        self.requests: list[dict] = []
        self.comments: list[dict] = []
        self.reviews: list[dict] = []
        self.post_status = 200
        self.get_status = 200
        self.foreign_link = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, body, headers=()):
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def _record(self, body=None):
                outer.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})

            def do_GET(self):
                self._record()
                u = urlparse(self.path)
                if u.path == "/repos/o/r/pulls/7/reviews":
                    return self._send(200, outer.reviews)
                if u.path != "/repos/o/r/pulls/7/comments":
                    return self._send(404, {"message": "Not Found"})
                if outer.get_status != 200:
                    return self._send(outer.get_status, {"message": "nope"})
                q = parse_qs(u.query)
                page, per = int(q.get("page", ["1"])[0]), 2  # tiny pages: pagination is exercised
                items = outer.comments[(page - 1) * per : page * per]
                headers = []
                if page * per < len(outer.comments):
                    port = self.server.server_address[1]
                    host = "localhost" if outer.foreign_link else "127.0.0.1"
                    headers.append(("Link", f'<http://{host}:{port}{u.path}?per_page=100&page={page + 1}>; rel="next"'))
                self._send(200, items, headers)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                self._record(body)
                if self.path != "/repos/o/r/pulls/7/reviews":
                    return self._send(404, {"message": "Not Found"})
                if outer.post_status != 200:
                    return self._send(outer.post_status, {"message": "Resource not accessible by integration"})
                outer.comments.extend({"id": len(outer.comments) + 1, **c} for c in body.get("comments", []))
                outer.reviews.append({"id": len(outer.reviews) + 1, "body": body.get("body", "")})
                self._send(200, {"id": 1000 + len(outer.requests)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def posts(self):
        return [r for r in self.requests if r["method"] == "POST"]


@pytest.fixture
def github():
    gh = FakeGitHub()
    gh.thread.start()
    yield gh
    gh.server.shutdown()
    gh.server.server_close()


def body_lines(n_pad=12):
    return ["void k(const Tensor& in) {\n"] + [f"  int pad{i} = {i};\n" for i in range(n_pad)] + [BAD, "}\n"]


@pytest.fixture
def pr_repo(tmp_path):
    """main: Op.mm with one old finding (line 14). topic: two new findings near the top, a new Metal file."""
    repo = init_repo(tmp_path / "repo")
    (repo / "mps").mkdir()
    lines = body_lines()
    (repo / "mps/Op.mm").write_text("".join(lines))
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "topic")
    lines.insert(2, BAD.replace(" n ", " added "))  # line 3, a safe fix
    lines.insert(3, IMPLICIT)  # line 4, no fix
    (repo / "mps/Op.mm").write_text("".join(lines))
    (repo / "mps/K.mm").write_text(HOST)
    head = commit_all(repo, "topic")
    return repo, head


def invoke(repo, *args, env=None, isolated=True):
    with chdir(repo):
        iso = ["--isolated"] if isolated else []
        return CliRunner(env=env).invoke(main, ["review", *iso, "--select", "MPS102,MPS107", "--base", "main", *args, "."])


def test_payload_comments_only_inside_hunks(pr_repo):
    repo, head = pr_repo
    # the extension requires torch >= 2.10: MPS107's `at::mps::dispatch_sync_with_rethrow` fix is safe there
    (repo / "pyproject.toml").write_text('[project]\nname = "ext"\ndependencies = ["torch>=2.10"]\n')
    r = invoke(repo, isolated=False)
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert payload["commit_id"] == head and payload["event"] == "COMMENT"
    by_line = {(c["path"], c["line"]): c for c in payload["comments"]}
    # line 16 (the old finding, moved down) is outside the hunk and existed at the merge base: not mentioned
    assert set(by_line) == {("mps/Op.mm", 3), ("mps/Op.mm", 4), ("mps/K.mm", 4)}
    assert all(c["side"] == "RIGHT" for c in payload["comments"])
    sugg = by_line[("mps/Op.mm", 3)]["body"]
    assert '```suggestion\n  const uint32_t added = c10::checked_convert<uint32_t>(in.numel(), "uint32_t");\n```' in sugg
    assert "suggestion" not in by_line[("mps/Op.mm", 4)]["body"]  # no safe fix, no suggestion
    # a fix touching lines 1 and 6 of a new file: one multi-line suggestion over the contiguous range
    # a fix touching lines 1 and 4 of a new file (MPS107 adds the header that declares the name it writes):
    # one multi-line suggestion over the contiguous range
    host = by_line[("mps/K.mm", 4)]
    assert host["start_line"] == 1 and host["start_side"] == "RIGHT"
    expected = HOST.replace("dispatch_sync(", "at::mps::dispatch_sync_with_rethrow(").replace("<torch/extension.h>\n", "<torch/extension.h>\n#include <ATen/mps/MPSStream.h>\n")
    new_lines = "".join(expected.splitlines(keepends=True)[:5])
    assert f"```suggestion\n{new_lines}```" in host["body"]
    fps = [MARK_RE.search(c["body"]).group(1) for c in payload["comments"]]
    assert len(set(fps)) == 3
    body = payload["body"]
    assert body.startswith(SUMMARY_MARKER)
    assert "3 new findings on changed lines (3 error), 2 with a suggested fix" in body  # `size(0) * size(1)` is a linear extent: an error
    assert "| MPS102 | 2 |" in body and "| MPS107 | 1 |" in body
    assert "mps/Op.mm:16" not in body and "outside the diff" not in body


def test_suggestion_not_offered_when_the_fix_leaves_the_hunk(tmp_path):
    # the MPS107 fix inserts an #include after line 1, far above a changed `dispatch_sync` on line 29
    repo = init_repo(tmp_path / "repo")
    (repo / "mps").mkdir()
    pad = "".join(f"// line {i}\n" for i in range(25))
    (repo / "mps/K.mm").write_text(HOST.replace("extension.h>\n", "extension.h>\n" + pad).replace("  dispatch_sync(q", "  dispatch_async(q"))
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "mps/K.mm").write_text(HOST.replace("extension.h>\n", "extension.h>\n" + pad))
    commit_all(repo, "topic")
    payload = json.loads(invoke(repo).stdout)
    (c,) = payload["comments"]
    assert c["line"] == 29 and "start_line" not in c and "suggestion" not in c["body"]


@pytest.fixture
def gh_env(github, tmp_path, pr_repo):
    repo, head = pr_repo
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "head": {"sha": head}}}))
    summary = tmp_path / "summary.md"
    return {
        "GITHUB_API_URL": github.url,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_STEP_SUMMARY": str(summary),
    }


def no_token_anywhere(r, *files):
    assert TOKEN not in r.stdout and TOKEN not in r.stderr
    for f in files:
        if f.exists():
            assert TOKEN not in f.read_text()


def test_post_once_then_never_duplicate(github, gh_env, pr_repo):
    repo, head = pr_repo
    github.comments = [{"id": 1, "body": "a human comment", "path": "mps/Op.mm", "line": 1}]
    r = invoke(repo, "--post", env=gh_env)
    assert r.exit_code == 0, r.output
    no_token_anywhere(r)
    assert [q["method"] for q in github.requests] == ["GET", "GET", "POST"]  # comments, reviews, create
    get, _, post = github.requests
    assert get["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert get["headers"]["Accept"] == "application/vnd.github+json"
    assert post["body"]["commit_id"] == head and len(post["body"]["comments"]) == 3
    # a re-run reads the comments back (over several pages) and posts nothing
    r = invoke(repo, "--post", env=gh_env)
    assert r.exit_code == 0 and "nothing new to post" in r.stderr
    assert len(github.posts()) == 1
    assert sum(1 for q in github.requests if q["method"] == "GET") >= 3  # 4 comments, pages of 2
    # one more finding: only its comment is posted
    text = (repo / "mps/Op.mm").read_text().replace("  int pad0 = 0;\n", "  int pad0 = 0;\n" + BAD.replace(" n ", " more "))
    (repo / "mps/Op.mm").write_text(text)
    commit_all(repo, "more")
    r = invoke(repo, "--post", env=gh_env)
    assert r.exit_code == 0, r.output
    assert len(github.posts()) == 2
    (c,) = github.posts()[-1]["body"]["comments"]
    assert "more" in c["body"]
    assert "already commented" in github.posts()[-1]["body"]["body"]


def test_yaml_change_reports_new_findings_off_the_diff_once(github, tmp_path):
    from ._integration_helpers import copysign_repo

    repo = copysign_repo(tmp_path / "cs")
    head = git(repo, "rev-parse", "HEAD").strip()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": head}}}))
    env = {"GITHUB_API_URL": github.url, "GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_PATH": str(event)}

    def review(*args):
        with chdir(repo):
            return CliRunner(env=env).invoke(main, ["review", "--isolated", "--select", "DSP301", "--base", "main", *args, "aten"])

    payload = json.loads(review().stdout)
    assert payload["comments"] == []  # no finding starts on a changed line
    body = payload["body"]
    assert "2 findings this change brings outside the diff's lines" in body
    assert "`aten/src/ATen/native/mps/operations/BinaryOps.mm:34` DSP301" in body  # an unchanged file
    assert "`aten/src/ATen/native/native_functions.yaml:45` DSP301" in body
    assert len(MARK_RE.findall(body)) == 2
    r = review("--post")
    assert r.exit_code == 0, r.output
    assert len(github.posts()) == 1 and github.posts()[0]["body"]["comments"] == []
    r = review("--post")  # the markers in the earlier review's body: nothing new
    assert r.exit_code == 0 and "nothing new" in r.stderr and len(github.posts()) == 1


def test_forbidden_falls_back_to_the_step_summary(github, gh_env, pr_repo, tmp_path):
    repo, _ = pr_repo
    github.post_status = 403
    r = invoke(repo, "--post", env=gh_env)
    assert r.exit_code == 0, r.output
    assert "may not write" in r.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "mps/Op.mm:3" in summary and "checked_convert" in summary and "<!-- mpslint:" not in summary
    assert len(github.posts()) == 1 and github.comments == []
    no_token_anywhere(r, tmp_path / "summary.md")


def test_rejected_review_posts_nothing_and_fails(github, gh_env, pr_repo, tmp_path):
    repo, _ = pr_repo
    github.post_status = 422
    r = invoke(repo, "--post", env=gh_env)
    assert r.exit_code == 2
    assert "nothing was posted" in r.stderr and "HTTP 422" in r.stderr
    assert len(github.posts()) == 1 and github.comments == []  # one all-or-nothing call
    no_token_anywhere(r, tmp_path / "summary.md")


def test_unreadable_comments_post_nothing(github, gh_env, pr_repo):
    repo, _ = pr_repo
    github.get_status = 500
    r = invoke(repo, "--post", env=gh_env)
    assert r.exit_code == 2 and github.posts() == []
    no_token_anywhere(r)


def test_pagination_never_follows_a_link_to_another_host(github):
    from mpslint.review.github import GitHub

    github.comments = [{"id": i, "body": f"c{i}"} for i in range(5)]
    client = GitHub(github.url, TOKEN, "o/r")
    assert len(client.review_comments(7)) == 5  # three pages
    github.requests.clear()
    github.foreign_link = True
    assert len(client.review_comments(7)) == 2  # the next page is on another origin: not followed
    assert len(github.requests) == 1


def test_post_needs_the_environment(pr_repo, gh_env):
    repo, _ = pr_repo
    env = dict(gh_env, GITHUB_TOKEN="")
    r = invoke(repo, "--post", env=env)
    assert r.exit_code == 2 and "GITHUB_TOKEN" in r.stderr


def test_unreachable_api_never_prints_the_token(pr_repo, gh_env):
    repo, _ = pr_repo
    env = dict(gh_env, GITHUB_API_URL=f"http://user:{TOKEN}@127.0.0.1:9")  # a token in the URL is scrubbed too
    r = invoke(repo, "--post", env=env)
    assert r.exit_code == 2
    no_token_anywhere(r)


def test_action_and_documented_workflows(tmp_path):
    import os
    import re
    import subprocess
    import sys

    import yaml

    from .conftest import ROOT

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = {s.get("name", s.get("uses")): s for s in action["runs"]["steps"]}
    assert steps["Upload SARIF"]["uses"].startswith("github/codeql-action/upload-sarif@")
    assert "--post" in steps["Review the pull request"]["run"]
    assert "pull_request" in steps["Review the pull request"]["if"]
    # the check step's script runs as written: SARIF file and exit code land in $GITHUB_OUTPUT
    proj = tmp_path / "proj"
    (proj / "mps").mkdir(parents=True)
    (proj / "mps/Op.mm").write_text("void k(const Tensor& in) {\n" + BAD + "}\n")
    out, summary = tmp_path / "out.txt", tmp_path / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(summary),
        "MPSLINT_PATHS": ".",
        "MPSLINT_ARGS": "--isolated",
        "MPSLINT_BASELINE": "",
    }
    r = subprocess.run(["bash", "-e", "-c", steps["mpslint check (SARIF)"]["run"]], cwd=proj, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert outputs["exit-code"] == "1"
    assert json.loads(open(outputs["sarif"]).read())["runs"][0]["results"][0]["ruleId"] == "MPS102"
    assert "::error file=mps/Op.mm,line=2" in r.stdout and "MPS102" in summary.read_text()
    # every YAML snippet of the integration docs parses
    docs = (ROOT / "docs/integrations.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, re.S)
    assert len(blocks) >= 3
    for b in blocks:
        yaml.safe_load(b)
