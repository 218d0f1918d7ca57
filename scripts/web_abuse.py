#!/usr/bin/env python3
"""The SCHED page's server (pg_jobs_web) against faults and abuse, over plain sockets: slow
clients, more logins than a role may hold, guessed passwords, a form from another site, an idle
session. Run by scripts/web_abuse_tests.sh against servers it starts; prints
"web abuse: NAME ... ok" or "... FAILED: why" for each test.

Clients come from different loopback addresses (127.0.0.2, 127.0.0.3, ...: all of 127/8 is this
machine on Linux), so that the per-address bounds of one do not fall on another."""

import argparse
import http.client
import json
import socket
import subprocess
import threading
import time
import urllib.parse

ROLE_PASSWORD = "pw-{}"


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True, help="a server with the default limits")
    p.add_argument("--app", required=True, help="its application_name in pg_stat_activity")
    p.add_argument("--idle-url", required=True, help="a server with --session-idle 2")
    p.add_argument("--idle-app", required=True)
    p.add_argument("--psql", required=True, help="psql, with the admin's connection options")
    return p.parse_args()


ARGS = parse_args()


def host_port(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port


def request(url, method, path, body=None, headers=None, source="127.0.0.1", timeout=10):
    """One request on a new connection: (status, headers as a list of pairs, body)."""
    host, port = host_port(url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout, source_address=(source, 0))
    try:
        h = {"Host": f"{host}:{port}"}
        h.update(headers or {})
        if body is not None:
            h.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        conn.close()


def cookies(headers):
    out = {}
    for k, v in headers:
        if k.lower() == "set-cookie":
            name, _, rest = v.partition("=")
            out[name] = rest.split(";")[0]
    return out


def login(url, role, password=None, source="127.0.0.1", headers=None):
    body = urllib.parse.urlencode({"role": role, "password": password or ROLE_PASSWORD.format(role)})
    return request(url, "POST", "/login", body, headers=headers, source=source)


def session_of(url, role, source="127.0.0.1"):
    status, headers, _ = login(url, role, source=source)
    if status != 303:
        raise AssertionError(f"login as {role}: {status}")
    return cookies(headers)["pgjobs_session"]


def api(url, path, session, source="127.0.0.1"):
    status, _, body = request(url, "GET", path, headers={"Cookie": f"pgjobs_session={session}"}, source=source)
    return status, body


def connections(role, app):
    out = subprocess.run(
        ARGS.psql.split() + ["-X", "-tA", "-c",
                             f"SELECT count(*) FROM pg_stat_activity WHERE usename = '{role}' AND application_name = '{app}'"],
        check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def wait_until(seconds, check):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def slow_clients_do_not_stall_the_server():
    host, port = host_port(ARGS.url)
    held = []

    def open_from(source):
        s = socket.create_connection((host, port), timeout=5, source_address=(source, 0))
        held.append(s)
        return s

    try:
        # Headers that promise a body never sent, each from an address of its own...
        for i in range(12):
            open_from(f"127.0.0.{2 + i}").sendall(
                f"POST /login HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                "Content-Length: 100000\r\n\r\n".encode())
        # ...headers never finished...
        for i in range(12):
            open_from(f"127.0.0.{20 + i}").sendall(f"POST /login HTTP/1.1\r\nHost: {host}".encode())
        # ...and many connections from one address, past its bound (the server closes the extra).
        for _ in range(40):
            try:
                open_from("127.0.0.40").sendall(
                    f"POST /login HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 100000\r\n\r\n".encode())
            except OSError:
                pass
        time.sleep(0.5)
        started = time.monotonic()
        try:
            status, _, body = request(ARGS.url, "GET", "/", timeout=5)
        except OSError as e:
            raise AssertionError(f"GET / from another client: {e!r} after {time.monotonic() - started:.1f} s")
        if status != 200 or b"<html" not in body:
            raise AssertionError(f"GET / from another client: {status}")
        # A client that never sends its body is answered 408 and let go.
        first = held[0]
        first.settimeout(20)
        answer = first.recv(200)
        if not answer.startswith(b"HTTP/1.1 408"):
            raise AssertionError(f"a body never sent: {answer[:40]!r}")
    finally:
        for s in held:
            s.close()


def a_client_that_stops_reading_is_let_go():
    host, port = host_port(ARGS.url)
    s = socket.create_connection((host, port), timeout=2, source_address=("127.0.0.60", 0))
    sent = 4000
    try:
        # More answers than the buffers of both ends hold (about 100 MB of app.js), never read.
        try:
            s.sendall(f"GET /app.js HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode() * sent)
        except socket.timeout:
            pass  # the server stopped reading requests while it cannot write
        time.sleep(1)
        status, _, _ = request(ARGS.url, "GET", "/", timeout=5)
        if status != 200:
            raise AssertionError(f"GET / from another client meanwhile: {status}")
        time.sleep(14)
        # Now read: a server that gave up closed the connection before answering everything.
        s.settimeout(30)
        data, answered = b"", 0
        try:
            while chunk := s.recv(1 << 20):
                answered += (data[-20:] + chunk).count(b"HTTP/1.1 200") - data[-20:].count(b"HTTP/1.1 200")
                data = chunk
        except ConnectionResetError:
            return
        if answered >= sent:
            raise AssertionError(f"all {sent} answers were written to a client that read none for 15 s")
    finally:
        s.close()


def sessions_and_connections_are_bounded():
    role, app = "web_ana", ARGS.app
    sessions = [session_of(ARGS.url, role) for _ in range(12)]
    # The connections of logins past the pool's two close as they are dropped.
    if not wait_until(5, lambda: connections(role, app) <= 2):
        raise AssertionError(f"{connections(role, app)} connections of {role} after 12 logins (at most 2)")
    codes = []

    def read(s, source):
        codes.append((s, api(ARGS.url, "/api/routines", s, source=source)[0]))

    # Three reads at once per session, each session from an address of its own.
    threads = [threading.Thread(target=read, args=(s, f"127.0.1.{i + 1}"))
               for i, s in enumerate(sessions) for _ in range(3)]
    for t in threads:
        t.start()
    seen = 0
    while any(t.is_alive() for t in threads):
        seen = max(seen, connections(role, app))
    for t in threads:
        t.join()
    seen = max(seen, connections(role, app))
    # The four oldest ended when the ninth to twelfth logged in; the other 8 read.
    status = {s: {c for x, c in codes if x == s} for s in sessions}
    if any(status[s] != {401} for s in sessions[:4]) or any(status[s] != {200} for s in sessions[4:]):
        raise AssertionError(f"statuses per session, oldest first: {[sorted(status[s]) for s in sessions]}")
    if not 1 <= seen <= 2:
        raise AssertionError(f"{seen} connections of {role} (at most 2)")


def wrong_passwords_back_off():
    role, url = "web_bob", ARGS.url
    # A browser that logged in as web_bob before: its cookie names it.
    status, headers, _ = login(url, role, source="127.0.0.5")
    known = cookies(headers).get("pgjobs_known")
    if status != 303 or not known:
        raise AssertionError(f"first login: {status} {cookies(headers)}")
    for i in range(5):
        status, _, _ = login(url, role, "guess-%d" % i, source="127.0.0.6")
        if status != 401:
            raise AssertionError(f"wrong password {i + 1}: {status}, not 401")
    status, headers, _ = login(url, role, "guess-x", source="127.0.0.6")
    retry = dict((k.lower(), v) for k, v in headers).get("retry-after")
    if status != 429 or not retry or not retry.isdigit():
        raise AssertionError(f"a sixth wrong password: {status}, Retry-After {retry}")
    # The role is locked for everyone, the right password too, from another address...
    status, _, _ = login(url, role, source="127.0.0.7")
    if status != 429:
        raise AssertionError(f"the right password while locked: {status}, not 429")
    # ...but not for the browser that logged in as it before.
    status, _, _ = login(url, role, source="127.0.0.5", headers={"Cookie": f"pgjobs_known={known}"})
    if status != 303:
        raise AssertionError(f"a known browser while locked: {status}, not 303")
    # Once the window has passed, the right password works.
    time.sleep(int(retry) + 0.2)
    status, _, _ = login(url, role, source="127.0.0.7")
    if status != 303:
        raise AssertionError(f"the right password after {retry} s: {status}, not 303")
    # Guessing on doubles the wait (the address's count goes on past the role's).
    waits = []
    for i in range(8):
        status, headers, _ = login(url, role, "again-%d" % i, source="127.0.0.6")
        if status == 429:
            waits.append(int(dict((k.lower(), v) for k, v in headers)["retry-after"]))
            time.sleep(waits[-1] + 0.2)
    if len(waits) < 2 or waits[-1] <= waits[0]:
        raise AssertionError(f"waits {waits}: not growing")


def cross_site_posts_are_refused():
    host, port = host_port(ARGS.url)
    role = "web_ana"
    for name, headers in [("Origin http://evil.example", {"Origin": "http://evil.example"}),
                          ("Origin null", {"Origin": "null"}),
                          ("Origin on another port", {"Origin": f"http://{host}:{port + 1}"}),
                          ("Sec-Fetch-Site cross-site", {"Sec-Fetch-Site": "cross-site"}),
                          ("Sec-Fetch-Site same-site", {"Sec-Fetch-Site": "same-site"})]:
        status, h, _ = login(ARGS.url, role, headers=headers)
        if status != 403 or "pgjobs_session" in cookies(h):
            raise AssertionError(f"login with {name}: {status}, not 403")
    status, h, _ = login(ARGS.url, role, headers={"Origin": f"http://{host}:{port}", "Sec-Fetch-Site": "same-origin"})
    if status != 303:
        raise AssertionError(f"a same-origin login: {status}, not 303")
    session = cookies(h)["pgjobs_session"]
    status, body = api(ARGS.url, "/api/me", session)
    csrf = json.loads(body)["csrf"]
    status, _, _ = request(ARGS.url, "POST", "/api/jobs/cancel", '{"jobs": []}', headers={
        "Cookie": f"pgjobs_session={session}", "X-CSRF-Token": csrf,
        "Content-Type": "application/json", "Origin": "http://evil.example"})
    if status != 403:
        raise AssertionError(f"a cancel with Origin http://evil.example: {status}, not 403")


def idle_sessions_end():
    role, app = "web_bob", ARGS.idle_app
    session = session_of(ARGS.idle_url, role)
    status, _ = api(ARGS.idle_url, "/api/routines", session)
    if status != 200 or connections(role, app) != 1:
        raise AssertionError(f"after login: {status}, {connections(role, app)} connections")
    # Used within the idle time, it lives on.
    time.sleep(1.2)
    if api(ARGS.idle_url, "/api/routines", session)[0] != 200:
        raise AssertionError("ended while in use")
    idle_since = time.monotonic()
    if not wait_until(6, lambda: connections(role, app) == 0):
        raise AssertionError(f"{connections(role, app)} connections left after 6 s idle")
    if time.monotonic() - idle_since < 2:
        raise AssertionError("the connection closed before the session was idle for 2 s")
    status, _ = api(ARGS.idle_url, "/api/routines", session)
    if status != 401:
        raise AssertionError(f"after its connection closed: {status}, not 401")


TESTS = [
    ("12+ slow clients (no body, unfinished headers, 40 from one address): GET / still answers",
     slow_clients_do_not_stall_the_server),
    ("a client that stops reading its answers is let go (10 s without progress)",
     a_client_that_stops_reading_is_let_go),
    ("12 logins of one role: 8 sessions, at most 2 database connections", sessions_and_connections_are_bounded),
    ("wrong passwords get 429 and Retry-After, doubling; the right password works after", wrong_passwords_back_off),
    ("a POST from another site (login, cancel) is refused 403; same origin logs in", cross_site_posts_are_refused),
    ("an idle session ends and its connection closes (--session-idle 2)", idle_sessions_end),
]

for name, test in TESTS:
    try:
        test()
        print(f"web abuse: {name} ... ok", flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is the test's
        print(f"web abuse: {name} ... FAILED: {e!r}", flush=True)
