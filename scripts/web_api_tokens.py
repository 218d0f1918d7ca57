#!/usr/bin/env python3
"""Seed 001's HTTP addresses driven by a script with API tokens, as a user's script would: no
browser, no login, no CSRF header. Run by scripts/web_tests.sh against a server it starts with
--api-role (and one without); prints "web api: NAME ... ok" or "... FAILED: why" for each test.

web_ana and web_bob make their tokens with psql (jobs_api_token_create), as a person would; the
admin's psql checks what the database holds after each request."""

import argparse
import http.client
import json
import os
import subprocess
import urllib.parse

p = argparse.ArgumentParser()
p.add_argument("--url", required=True, help="a server started with --api-role")
p.add_argument("--plain-url", required=True, help="a server started without it")
p.add_argument("--psql", required=True, help="psql with host, port and database, no user")
ARGS = p.parse_args()


def sql(sql_text, role="postgres"):
    """One value, as `role` (web_ana and web_bob with their passwords)."""
    env = dict(os.environ, PGPASSWORD=f"pw-{role}")
    out = subprocess.run(ARGS.psql.split() + ["-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-U", role, "-c", sql_text],
                         env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def request(method, path, token=None, body=None, url=None, headers=None):
    """(status, parsed JSON or text) of one request."""
    u = urllib.parse.urlsplit(url or ARGS.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=15)
    try:
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read().decode()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw
    finally:
        conn.close()


class Failed(Exception):
    pass


def expect(condition, why):
    if not condition:
        raise Failed(why)


def token_of(role, label):
    return sql(f"SELECT token FROM pgjobs.jobs_api_token_create('{label}')", role)


def seed_addresses_with_a_token():
    token = token_of("web_ana", "nightly script")
    status, me = request("GET", "/api/me", token)
    expect(status == 200 and me == {"role": "web_ana"}, f"/api/me: {status} {me}")
    status, schedules = request("GET", "/api/schedules", token)
    names = sorted(s.get("schedule") for s in schedules) if status == 200 else schedules
    expect(status == 200 and "WEB" in names and "BOB" not in names, f"/api/schedules: {status} {names}")
    status, mode = request("GET", "/api/schedules/WEB/mode", token)
    expect(status == 200 and mode.get("asked") in ("control", "observe"), f"GET mode: {status} {mode}")
    # A POST with a token needs no CSRF header.
    status, answer = request("POST", "/api/schedules/WEB/mode", token, {"mode": "observe"})
    held = sql("SELECT asked FROM pgjobs.routines_mode('WEB')", "web_ana")
    expect(status == 200 and held == "observe", f"POST mode: {status} {answer}; the database says {held}")
    request("POST", "/api/schedules/WEB/mode", token, {"mode": "control"})
    status, groups = request("GET", "/api/web/sched/jobs/groups?by=routine", token)
    expect(status == 200 and any("bulk" in str(g.get("group_key")) for g in groups), f"groups: {status} {groups}")
    job = sql("SELECT pgjobs.batch_post('echo', ARRAY['by token'], computer => 'alpha', routine => 'tokcancel', "
              "run_at => now() + interval '2 hours')", "web_ana")
    status, cancelled = request("POST", "/api/web/sched/jobs/cancel", token, {"jobs": [int(job)]})
    now = sql(f"SELECT status FROM pgjobs.batch_jobs WHERE id = {job}", "web_ana")
    expect(status == 200 and now == "CANCEL", f"cancel: {status} {cancelled}; the job is {now}")
    used = sql("SELECT last_used_at IS NOT NULL FROM pgjobs.jobs_api_tokens WHERE label = 'nightly script'", "web_ana")
    expect(used == "t", "the token's use was not noted")


def another_roles_token_sees_nothing():
    token = token_of("web_bob", "bob script")
    status, schedules = request("GET", "/api/schedules", token)
    names = [s.get("schedule") for s in schedules] if status == 200 else schedules
    expect(status == 200 and "WEB" not in names and "BOB" in names, f"bob's /api/schedules: {status} {names}")
    before = sql("SELECT asked FROM pgjobs.routines_mode('WEB')", "web_ana")
    status, answer = request("POST", "/api/schedules/WEB/mode", token, {"mode": "observe"})
    after = sql("SELECT asked FROM pgjobs.routines_mode('WEB')", "web_ana")
    expect(status == 400 and after == before, f"bob's POST of ana's mode: {status} {answer}; {before} -> {after}")


def revoked_wrong_and_missing_tokens_refused():
    token = token_of("web_ana", "to revoke")
    status, _ = request("GET", "/api/schedules", token)
    expect(status == 200, f"before the revoke: {status}")
    sql("SELECT pgjobs.jobs_api_token_revoke(id) FROM pgjobs.jobs_api_tokens WHERE label = 'to revoke'", "web_ana")
    for name, tok in (("revoked", token), ("wrong", "pgjobs_" + "0" * 64), ("another's, altered", token[:-1] + "x")):
        status, answer = request("GET", "/api/schedules", tok)
        expect(status == 401 and "invalid or revoked" in str(answer), f"a {name} token: {status} {answer}")
    status, answer = request("POST", "/api/schedules/WEB/mode", token, {"mode": "observe"})
    expect(status == 401, f"a revoked token's POST: {status} {answer}")
    status, answer = request("GET", "/api/schedules")
    expect(status == 401, f"no token and no session: {status} {answer}")


def forged_token_requests_refused():
    token = token_of("web_ana", "forged")
    status, answer = request("POST", "/api/schedules/WEB/mode", token, {"mode": "observe"},
                             headers={"Origin": "http://evil.example"})
    expect(status == 403, f"from another site's page: {status} {answer}")
    u = urllib.parse.urlsplit(ARGS.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=15)
    conn.request("POST", "/api/schedules/WEB/mode", body="mode=observe",
                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-www-form-urlencoded"})
    status = conn.getresponse().status
    conn.close()
    expect(status == 415, f"as a form: {status}")
    mode = sql("SELECT asked FROM pgjobs.routines_mode('WEB')", "web_ana")
    expect(mode == "control", f"WEB's mode after forged requests: {mode}")


def a_server_without_an_api_role_takes_no_token():
    token = token_of("web_ana", "plain")
    status, answer = request("GET", "/api/schedules", token, url=ARGS.plain_url)
    expect(status == 401 and "no API tokens" in str(answer), f"{status} {answer}")


TESTS = [
    ("an API token answers seed 001's addresses as its role (GET and POST, no CSRF header); its use noted",
     seed_addresses_with_a_token),
    ("another role's token sees and changes nothing of the first's", another_roles_token_sees_nothing),
    ("a revoked, a wrong and no token are refused (401)", revoked_wrong_and_missing_tokens_refused),
    ("a token's POST from another site's page (403) or as a form (415) changes nothing", forged_token_requests_refused),
    ("a server without --api-role takes no token", a_server_without_an_api_role_takes_no_token),
]

for name, test in TESTS:
    try:
        test()
        print(f"web api: {name} ... ok", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported, and the next test runs
        print(f"web api: {name} ... FAILED: {e}", flush=True)
sql("SELECT count(pgjobs.jobs_api_token_revoke(id)) FROM pgjobs.jobs_api_tokens WHERE revoked_at IS NULL", "web_ana")
sql("SELECT count(pgjobs.jobs_api_token_revoke(id)) FROM pgjobs.jobs_api_tokens WHERE revoked_at IS NULL", "web_bob")
