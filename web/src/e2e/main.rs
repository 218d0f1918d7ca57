//! pg_jobs_web_e2e: the SCHED page's tests in a real headless browser (scripts/web_tests.sh runs
//! it against the fixtures it made: people web_ana and web_bob, schedules WEB, WEB2 and BOB, batch
//! jobs, and cron schedules). Each test checks one point of issue 15 and prints "web: name ... ok" or
//! "web: name ... FAILED: why". Screenshots of each tab go to --out.

mod webdriver;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use webdriver::{Browser, Res, VIEWER_TIME_ZONE};

const FAILING: [&str; 3] = ["ERROR", "DELAYED", "SILENT"];
const USAGE: &str =
    "usage: pg_jobs_web_e2e --url URL --dead-url URL --admin-dsn DSN --driver-port PORT --out DIR";

struct Ctx {
    b: Browser,
    url: String,
    dead_url: String,
    admin: postgres::Client,
    admin_dsn: String,
    out: PathBuf,
}

fn tid(id: &str) -> String {
    format!("[data-testid=\"{id}\"]")
}

/// Whether a text shows a time as ISO 8601 writes it (2026-12-02T01:13:51), not as the page does.
fn raw_iso_time(text: &str) -> bool {
    text.as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'T' && w[2].is_ascii_digit())
}

fn fail<T>(why: impl Into<String>) -> Res<T> {
    Err(why.into())
}

/// Polls until the check says yes (or fails with its last reason).
fn wait_for(secs: u64, mut check: impl FnMut() -> Res<bool>) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut last = String::from("never true");
    loop {
        match check() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = e,
        }
        if Instant::now() > deadline {
            return fail(format!("not within {secs} s: {last}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Clicks `button`, whose question must start with `question`, and dismisses it: nothing may
/// change (`unchanged`, read half a second later); then clicks again and accepts.
fn confirm_after_a_dismissal(
    c: &mut Ctx,
    button: &str,
    question: &str,
    unchanged: impl Fn(&mut Ctx) -> Res<bool>,
) -> Res<()> {
    c.b.click_css(button)?;
    let asked = c.b.alert_text()?;
    c.b.dismiss_alert()?;
    std::thread::sleep(Duration::from_millis(500));
    if !asked.starts_with(question) || !unchanged(c)? {
        return fail(format!(
            "asked {asked:?} (not {question:?}), or a dismissed question changed something"
        ));
    }
    c.b.click_css(button)?;
    c.b.accept_alert()
}

impl Ctx {
    fn sql_one(&mut self, sql: &str) -> Res<String> {
        let row = self
            .admin
            .query_one(sql, &[])
            .map_err(|e| format!("{sql}: {e}"))?;
        Ok(row.get::<_, Option<String>>(0).unwrap_or_default())
    }

    fn as_role(&self, role: &str) -> Res<postgres::Client> {
        let dsn = self
            .admin_dsn
            .replace("user=postgres", &format!("user={role} password=pw-{role}"));
        postgres::Client::connect(&dsn, postgres::NoTls).map_err(|e| e.to_string())
    }

    fn js(&self, script: &str) -> Res<Value> {
        self.b.exec(script, json!([]))
    }

    fn js_str(&self, script: &str) -> Res<String> {
        Ok(match self.js(script)? {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    fn visible(&self, testid: &str) -> Res<bool> {
        Ok(self.js(&format!(
            "const e = document.querySelector('{}'); return !!e && e.offsetParent !== null;",
            tid(testid)
        ))? == json!(true))
    }

    fn login(&self, role: &str, password: &str, url: &str) -> Res<()> {
        self.b.goto(&format!("{url}/"))?;
        wait_for(10, || self.visible("login"))?;
        let r = self.b.find(&tid("login-role"))?;
        self.b.clear(&r)?;
        self.b.type_into(&r, role)?;
        self.b
            .type_into(&self.b.find(&tid("login-password"))?, password)?;
        self.b.click_css(&tid("login-submit"))
    }

    fn login_ok(&self, role: &str) -> Res<()> {
        self.b.delete_cookies()?;
        self.login(role, &format!("pw-{role}"), &self.url)?;
        wait_for(10, || self.visible("app"))?;
        wait_for(10, || Ok(self.b.text_css(&tid("whoami"))? == role))
    }

    fn blur(&self) -> Res<()> {
        self.js("if (document.activeElement) document.activeElement.blur();")
            .map(|_| ())
    }

    fn press(&self, key: &str) -> Res<()> {
        self.blur()?;
        self.b.press(key)
    }

    fn active_tab(&self) -> Res<String> {
        self.js_str(
            "const t = document.querySelector('.tab.active'); return t ? t.dataset.tab : '';",
        )
    }

    /// The groups shown: [key, open].
    fn groups(&self) -> Res<Vec<(String, bool)>> {
        let v = self.js("return [...document.querySelectorAll('[data-testid=group]')].map(g => [g.dataset.group, g.dataset.open === 'true']);")?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .map(|g| {
                        (
                            g[0].as_str().unwrap_or("").to_string(),
                            g[1].as_bool().unwrap_or(false),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn group_header(&self, key: &str) -> String {
        format!("[data-testid=group][data-group=\"{key}\"] > [data-testid=group-header]")
    }

    fn rows(&self, testid: &str, attr: &str) -> Res<Vec<String>> {
        let v = self.js(&format!(
            "return [...document.querySelectorAll('[data-testid={testid}]')].map(r => r.dataset.{attr});"
        ))?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn select(&self, testid: &str, value: &str) -> Res<()> {
        self.b.click_css(&tid(testid))?;
        self.b
            .click_css(&format!("{} option[value=\"{value}\"]", tid(testid)))?;
        self.blur()
    }

    fn open_filters(&self) -> Res<()> {
        if !self.visible("filters")? {
            self.b.click_css(&tid("filters-button"))?;
        }
        wait_for(5, || self.visible("filters"))
    }

    fn set_text_filter(&self, text: &str) -> Res<()> {
        self.open_filters()?;
        let e = self.b.find(&tid("filter-text"))?;
        self.b.clear(&e)?;
        // clear() sends no input event: type a space and delete it to tell the page.
        self.b.type_into(&e, &format!("{text} \u{E003}"))?;
        self.blur()
    }

    /// A fresh page: nothing remembered in the browser, back to the first tab.
    fn fresh(&self, query: &str) -> Res<()> {
        self.js("localStorage.clear();")?;
        self.b.goto(&format!("{}/{query}", self.url))?;
        wait_for(10, || self.visible("app"))?;
        // Read once: the tab shows its groups.
        wait_for(10, || Ok(!self.groups()?.is_empty()))
    }

    /// Counts from now on the page's reads of an address (its refresh reads it every 5 s).
    fn count_reads(&self, address: &str) -> Res<()> {
        self.js(&format!(
            "window.reads = 0;
             window.readsOf = '{address}';
             if (!window.readsCounted) {{
                 window.readsCounted = true;
                 const plain = window.fetch;
                 window.fetch = (...args) => plain(...args).then((r) => {{
                     if (String(args[0]).startsWith(window.readsOf)) window.reads += 1;
                     return r;
                 }});
             }}"
        ))
        .map(|_| ())
    }

    /// Two reads since count_reads: the refresh of the first one has been shown.
    fn wait_refreshed(&self) -> Res<()> {
        wait_for(15, || {
            Ok(self.js("return window.reads;")?.as_u64().unwrap_or(0) >= 2)
        })
    }

    /// Whether window.probe, a node of the list, is still the one shown and still has the focus.
    fn probe_kept(&self, css: &str, focused: bool) -> Res<bool> {
        let check = if focused {
            "document.activeElement === window.probe"
        } else {
            "true"
        };
        Ok(self.js(&format!(
            "return document.querySelector('{css}') === window.probe && window.probe.isConnected && {check};"
        ))? == json!(true))
    }

    /// Focuses the node `css` of the list, waits for a refresh read from `address` to be shown,
    /// and fails unless the same node still has the focus (`what` names it).
    fn focus_survives_refresh(&self, css: &str, address: &str, what: &str) -> Res<()> {
        self.js(&format!(
            "window.probe = document.querySelector('{css}'); window.probe.focus();"
        ))?;
        self.count_reads(address)?;
        self.wait_refreshed()?;
        self.probe_kept(css, true)?
            .then_some(())
            .ok_or(format!("{what} lost the focus in a refresh"))
    }

    /// A time of schedule WEB (a column of routine_schedules) as the page writes it in a zone,
    /// without the zone's name.
    fn web_schedule_time(&mut self, time: &str, zone: &str) -> Res<String> {
        self.sql_one(&format!(
            "SELECT to_char(({time}) AT TIME ZONE '{zone}', 'YYYY-MM-DD HH24:MI:SS')
             FROM pgjobs.routine_schedules WHERE schedule = 'WEB'"
        ))
    }

    fn job_status(&mut self, where_: &str) -> Res<String> {
        self.sql_one(&format!(
            "SELECT string_agg(status, ',' ORDER BY id) FROM pgjobs.batch_jobs WHERE {where_}"
        ))
    }
}

// ---- the tests, in the order they run ----

fn login_wrong_password(c: &mut Ctx) -> Res<()> {
    c.b.delete_cookies()?;
    c.login("web_ana", "not-the-password", &c.url)?;
    wait_for(10, || c.visible("login-wrong"))?;
    let text = c.b.text_css(&tid("login-wrong"))?;
    if !text.contains("Wrong role or password") {
        return fail(format!("the page says {text}"));
    }
    // No session was made.
    c.b.goto(&format!("{}/", c.url))?;
    wait_for(10, || c.visible("login"))
}

fn login_database_unreachable(c: &mut Ctx) -> Res<()> {
    c.login("web_ana", "pw-web_ana", &c.dead_url)?;
    wait_for(15, || c.visible("login-unreachable"))?;
    let text = c.b.text_css(&tid("login-unreachable"))?;
    text.contains("Database not reachable")
        .then_some(())
        .ok_or(format!("the page says {text}"))
}

fn login_cookie_is_http_only(c: &mut Ctx) -> Res<()> {
    c.login_ok("web_ana")?;
    let cookies = c.js_str("return document.cookie;")?;
    if cookies.contains("pgjobs_session") {
        return fail("the page's script can read the session cookie");
    }
    let r = ureq_agent()
        .post(format!("{}/login", c.url))
        .content_type("application/x-www-form-urlencoded")
        .send("role=web_ana&password=pw-web_ana")
        .map_err(|e| e.to_string())?;
    let set = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let id = set
        .split(';')
        .next()
        .unwrap_or("")
        .trim_start_matches("pgjobs_session=");
    if r.status().as_u16() != 303
        || !set.contains("HttpOnly")
        || !set.contains("SameSite=Strict")
        || !set.contains("Path=/")
    {
        return fail(format!("{} {set}", r.status()));
    }
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(())
        .ok_or(format!("session id {id}"))
}

fn tabs_counts(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    if c.active_tab()? != "realtime" {
        return fail("Realtime is not the first tab");
    }
    // WEB: quotes, news, broken, the scheduler; WEB2: clock. Batch: load, report. The broken one fails.
    wait_for(20, || {
        let shown = [
            c.b.text_css(&tid("tab-realtime-count"))?,
            c.b.text_css(&tid("tab-realtime-failing"))?,
            c.b.text_css(&tid("tab-batch-count"))?,
        ];
        if shown != ["5 routines", "1 failing", "2 routines"] {
            return fail(format!("the tabs say {shown:?}"));
        }
        Ok(true)
    })?;
    let active =
        c.sql_one("SELECT count(*)::text FROM pgjobs.batch_active WHERE owner::text = 'web_ana'")?;
    wait_for(10, || {
        let shown = c.b.text_css(&tid("tab-jobs-count"))?;
        if shown != format!("{active} active") {
            return fail(format!("Jobs tab shows {shown}, {active} active"));
        }
        Ok(true)
    })?;
    c.b.screenshot(&c.out.join("realtime.png"))
}

/// "2) Batch 7 3 failing" read as 73 failing: every number now comes with its word.
fn counts_read_with_their_words(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    let realtime = "return document.querySelector('[data-testid=tab-realtime]').innerText;";
    wait_for(10, || {
        Ok(c.js_str(realtime)? == "1) Realtime 5 routines 1 failing")
    })
    .map_err(|e| format!("the tab reads {:?}: {e}", c.js_str(realtime)))?;
    c.b.click_css(&tid("tab-batch"))?;
    let load = format!("[data-group=LOAD] {}", tid("group-counts"));
    wait_for(20, || {
        Ok(c.b.text_css(&load)? == "2 routines · 1 scheduled · 1 completed")
    })
    .map_err(|e| format!("LOAD's header reads {:?}: {e}", c.b.text_css(&load)))?;
    jobs_tab(c, "routine", "cancelgroup", false)?;
    let counts =
        c.b.text_css(&format!("[data-group=cancelgroup] {}", tid("group-counts")))?;
    (counts == "3 WAITING")
        .then_some(())
        .ok_or(format!("cancelgroup's header reads {counts:?}"))
}

fn times_one_format_in_either_zone(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    let button = "[data-testid=schedule-toggle][data-schedule=WEB]";
    let title =
        |c: &Ctx| -> Res<String> { Ok(c.b.attr(&c.b.find(button)?, "title")?.unwrap_or_default()) };
    let utc = format!(" at {} UTC;", c.web_schedule_time("mode_at", "UTC")?);
    let local = format!(
        " at {} GMT+9;",
        c.web_schedule_time("mode_at", VIEWER_TIME_ZONE)?
    );
    if !title(c)?.contains(&utc) || c.b.text_css(&tid("time-zone"))? != "Times: UTC" {
        return fail(format!("in UTC, the switch's title: {}", title(c)?));
    }
    c.b.click_css(&tid("time-zone"))?;
    wait_for(5, || Ok(title(c)?.contains(&local))).map_err(|e| {
        format!(
            "in the viewer's zone, the switch's title: {:?} {e}",
            title(c)
        )
    })?;
    if c.b.text_css(&tid("time-zone"))? != format!("Times: {VIEWER_TIME_ZONE}") {
        return fail(format!(
            "the button says {}",
            c.b.text_css(&tid("time-zone"))?
        ));
    }
    // Remembered, and every time of the page in that zone.
    c.b.refresh()?;
    wait_for(10, || Ok(title(c).is_ok_and(|t| t.contains(&local))))
        .map_err(|e| format!("after a reload: {e}"))?;
    c.b.click_css(&c.group_header("FEEDS"))?;
    c.b.click_css("[data-testid=routine-row][data-routine=\"web_ana@alpha:feeds.quotes\"]")?;
    wait_for(10, || {
        let details = c.b.text_css(&tid("routine-details"))?;
        Ok(details.contains("GMT+9") && !details.contains("UTC") && !raw_iso_time(&details))
    })
    .map_err(|e| {
        format!(
            "the details: {:?} {e}",
            c.b.text_css(&tid("routine-details"))
        )
    })?;
    c.b.click_css(&tid("time-zone"))?;
    wait_for(5, || Ok(title(c)?.contains(&utc)))
}

fn tabs_keys_and_address(c: &mut Ctx) -> Res<()> {
    for (key, tab) in [("2", "batch"), ("3", "jobs"), ("1", "realtime")] {
        c.press(key)?;
        wait_for(5, || Ok(c.active_tab()? == tab))?;
        let url = c.b.url()?;
        if !url.contains(&format!("tab={tab}")) {
            return fail(format!("after key {key} the address is {url}"));
        }
    }
    Ok(())
}

fn address_opens_tab(c: &mut Ctx) -> Res<()> {
    for (query, tab) in [
        ("?tab=2", "batch"),
        ("?tab=jobs", "jobs"),
        ("?tab=3", "jobs"),
        ("?tab=realtime", "realtime"),
    ] {
        c.b.goto(&format!("{}/{query}", c.url))?;
        wait_for(10, || Ok(c.active_tab()? == tab)).map_err(|e| format!("{query}: {e}"))?;
    }
    c.b.click_css(&tid("tab-batch"))?;
    wait_for(5, || Ok(c.b.url()?.contains("tab=batch")))?;
    c.b.screenshot(&c.out.join("batch.png"))
}

fn filters_shut_and_remembered(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    if c.visible("filters")? {
        return fail("the filters are open before being asked for");
    }
    c.b.click_css(&tid("filters-button"))?;
    wait_for(5, || c.visible("filters"))?;
    c.b.refresh()?;
    wait_for(10, || c.visible("filters")).map_err(|e| format!("open, after a reload: {e}"))?;
    c.b.click_css(&tid("filters-button"))?;
    c.b.refresh()?;
    wait_for(10, || c.visible("app"))?;
    std::thread::sleep(Duration::from_millis(500));
    (!c.visible("filters")?)
        .then_some(())
        .ok_or("shut, after a reload: open".into())
}

fn filters_count(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    c.set_text_filter("quotes")?;
    c.select("filter-status", "running")?;
    wait_for(5, || {
        Ok(c.b.text_css(&tid("filters-button"))? == "Filters · 2")
    })?;
    let rows = c.rows("routine-row", "routine")?;
    if rows != ["web_ana@alpha:feeds.quotes"] {
        return fail(format!("rows {rows:?}"));
    }
    c.set_text_filter("")?;
    c.select("filter-status", "")?;
    wait_for(5, || Ok(c.b.text_css(&tid("filters-button"))? == "Filters"))
}

fn key_slash_opens_text_filter(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    c.press("/")?;
    wait_for(5, || c.visible("filters"))?;
    let focused = c.js_str("return document.activeElement.dataset.testid || '';")?;
    (focused == "filter-text")
        .then_some(())
        .ok_or(format!("the focus is on {focused}"))
}

fn problems_only(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    c.press("P")?;
    wait_for(10, || {
        let statuses = c.rows("routine-row", "status")?;
        Ok(!statuses.is_empty()
            && statuses
                .iter()
                .all(|s| ["ERROR", "DELAYED", "SILENT"].contains(&s.as_str())))
    })?;
    let routines = c.rows("routine-row", "routine")?;
    if routines != ["web_ana@alpha:broken.feed"] {
        return fail(format!("problems: {routines:?}"));
    }
    if c.b.text_css(&tid("filters-button"))? != "Filters · 1" {
        return fail("Problems only is not counted");
    }
    c.press("P")?;
    // Every group again, shut as realtime groups start.
    wait_for(5, || {
        Ok(c.groups()?.len() == 4 && c.rows("routine-row", "routine")?.is_empty())
    })
}

fn groupings(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    c.open_filters()?;
    let keys = |c: &Ctx| -> Res<Vec<String>> { Ok(c.groups()?.into_iter().map(|g| g.0).collect()) };
    let want: [(&str, &[&str]); 3] = [
        ("group", &["BROKEN", "FEEDS", "MISC", "SCHED"]),
        ("schedule", &["WEB", "WEB2"]),
        ("computer", &["alpha"]),
    ];
    for (by, expected) in want {
        c.select("group-by", by)?;
        wait_for(5, || Ok(keys(c)? == expected))
            .map_err(|e| format!("by {by}: {:?} {e}", keys(c)))?;
    }
    c.select("group-by", "status")?;
    wait_for(5, || {
        let k = keys(c)?;
        Ok(k.len() == 2
            && k.contains(&"running".to_string())
            && k.iter().any(|s| FAILING.contains(&s.as_str())))
    })
    .map_err(|e| format!("by status: {:?} {e}", keys(c)))?;
    c.select("group-by", "order")?;
    wait_for(5, || {
        Ok(c.b.find_all(&tid("run-order"))?.len() == 1
            && c.rows("routine-row", "routine")?.len() == 5)
    })?;
    c.select("group-by", "group")
}

fn realtime_groups_start_shut_and_stay_open(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    let groups = c.groups()?;
    if groups.is_empty() || groups.iter().any(|g| g.1) {
        return fail(format!("at first: {groups:?}"));
    }
    c.b.click_css(&c.group_header("FEEDS"))?;
    wait_for(5, || Ok(c.groups()?.contains(&("FEEDS".into(), true))))?;
    c.b.refresh()?;
    wait_for(10, || {
        let g = c.groups()?;
        Ok(g.len() == 4 && g.iter().all(|(k, open)| *open == (k == "FEEDS")))
    })
}

fn group_header_status(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    wait_for(15, || {
        let broken =
            c.b.text_css(&format!("[data-group=BROKEN] {}", tid("group-status")))?;
        Ok(c.b.text_css(&c.group_header("FEEDS"))?.contains("RUNNING")
            && !c
                .b
                .find_all(&format!("[data-group=FEEDS] {}", tid("group-dot")))?
                .is_empty()
            && FAILING.contains(&broken.as_str())
            && c.b
                .text_css(&format!("[data-group=BROKEN] {}", tid("group-counts")))?
                == format!("1 {broken}")
            && c.b
                .find_all(&format!("[data-group=BROKEN] {}", tid("group-dot")))?
                .is_empty())
    })
}

fn filter_opens_groups(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    c.set_text_filter("news")?;
    wait_for(5, || Ok(c.groups()? == [("FEEDS".to_string(), true)]))?;
    let rows = c.rows("routine-row", "routine")?;
    (rows == ["web_ana@alpha:feeds.news"])
        .then_some(())
        .ok_or(format!("rows {rows:?}"))
}

fn scheduled_routine_says_when(c: &mut Ctx) -> Res<()> {
    // etl.report runs at 23:59 in the schedule's zone, about twelve hours from now.
    let when = c.web_schedule_time("(day + time '23:59') AT TIME ZONE time_zone", "UTC")?;
    c.fresh("?tab=batch")?;
    let next_run = |routine: &str| {
        format!(
            "[data-testid=routine-row][data-routine=\"web_ana@alpha:{routine}\"] {}",
            tid("routine-next-run")
        )
    };
    wait_for(10, || {
        Ok(c.b.text_css(&next_run("etl.report"))? == format!("next run {when} UTC"))
    })
    .map_err(|e| {
        format!(
            "etl.report's line: {:?} {e}",
            c.b.text_css(&next_run("etl.report"))
        )
    })?;
    // One that has run says nothing of it.
    c.b.find_all(&next_run("etl.load"))?
        .is_empty()
        .then_some(())
        .ok_or("etl.load, completed, tells a next run".into())
}

/// The reading every 5 s changes the rows in place: a selection or the focus in the list stays.
fn routines_patched_in_place(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    c.b.click_css(&c.group_header("FEEDS"))?;
    let row = "[data-testid=routine-row][data-routine=\"web_ana@alpha:feeds.quotes\"]";
    wait_for(5, || Ok(!c.b.find_all(row)?.is_empty()))?;
    c.js(&format!(
        "window.probe = document.querySelector('{row}');
         getSelection().selectAllChildren(window.probe.querySelector('.name'));"
    ))?;
    c.count_reads("/api/routines")?;
    c.wait_refreshed()?;
    let selected = c.js_str("return getSelection().toString();")?;
    if !c.probe_kept(row, false)? || selected != "feeds.quotes" {
        return fail(format!(
            "after a refresh: the same row {}, selected {selected:?}",
            c.probe_kept(row, false)?
        ));
    }
    c.b.click_css(row)?;
    wait_for(5, || c.visible("routine-restart"))?;
    c.focus_survives_refresh(&tid("routine-restart"), "/api/routines", "Restart")
}

fn open_routine(c: &Ctx, routine: &str) -> Res<()> {
    c.fresh("")?;
    c.set_text_filter(routine)?;
    c.b.click_css(&format!(
        "[data-testid=routine-row][data-routine=\"{routine}\"]"
    ))?;
    wait_for(5, || c.visible("routine-details"))
}

fn details_mask_secrets(c: &mut Ctx) -> Res<()> {
    open_routine(c, "web_ana@alpha:feeds.quotes")?;
    let details = c.b.text_css(&tid("routine-details"))?;
    let args = c.b.text_css(&tid("routine-args"))?;
    let html = c.js_str("return document.documentElement.outerHTML;")?;
    if !details.contains("web_ana@alpha:feeds.quotes")
        || !details.contains("Waits for")
        || !details.contains("Last message")
    {
        return fail(format!("details: {details}"));
    }
    if args != "--password ******** --fast" || html.contains("hunter2") {
        return fail(format!("arguments shown: {args}"));
    }
    wait_for(10, || {
        Ok(c.b
            .text_css(&tid("routine-last-message"))?
            .contains("quote"))
    })
}

fn scheduler_has_no_commands(c: &mut Ctx) -> Res<()> {
    open_routine(c, "postgres@alpha:pg_jobs.scheduler")?;
    let buttons =
        c.b.find_all(&tid("routine-restart"))?.len() + c.b.find_all(&tid("routine-stop"))?.len();
    (buttons == 0)
        .then_some(())
        .ok_or("the scheduler has Restart or Stop".into())
}

fn restart_asks_and_names_the_person(c: &mut Ctx) -> Res<()> {
    let job_of = "SELECT job_id::text FROM pgjobs.routines_today WHERE routine = 'web_ana@alpha:feeds.quotes'";
    let before = c.sql_one(job_of)?;
    open_routine(c, "web_ana@alpha:feeds.quotes")?;
    let logged = "SELECT count(*)::text FROM pgjobs.routine_messages
                  WHERE message = 'SCHED: restart of web_ana@alpha:feeds.quotes sent by web_ana'";
    confirm_after_a_dismissal(c, &tid("routine-restart"), "Restart", |c| {
        Ok(c.sql_one(logged)? == "0")
    })?;
    wait_for(10, || Ok(c.sql_one(logged)? == "1"))?;
    wait_for(30, || {
        let now = c.sql_one(job_of)?;
        Ok(now != before
            && c.sql_one("SELECT status FROM pgjobs.routines_today WHERE routine = 'web_ana@alpha:feeds.quotes'")? == "running")
    })?;
    // The page shows it too, read again without a reload.
    wait_for(15, || {
        Ok(c.b
            .text_css(&tid("routine-messages"))?
            .contains("SCHED: restart of web_ana@alpha:feeds.quotes sent by web_ana"))
    })
}

fn stop_asks_and_names_the_person(c: &mut Ctx) -> Res<()> {
    let job = c.sql_one(
        "SELECT job_id::text FROM pgjobs.routines_today WHERE routine = 'web_ana@alpha:feeds.news'",
    )?;
    open_routine(c, "web_ana@alpha:feeds.news")?;
    c.b.click_css(&tid("routine-stop"))?;
    if !c.b.alert_text()?.starts_with("Stop") {
        return fail("no question");
    }
    c.b.accept_alert()?;
    wait_for(10, || {
        Ok(c.sql_one(
            "SELECT count(*)::text FROM pgjobs.routine_messages
                      WHERE message = 'SCHED: stop of web_ana@alpha:feeds.news sent by web_ana'",
        )? == "1")
    })?;
    wait_for(
        20,
        || Ok(c.job_status(&format!("id = {job}"))? != "RUNNING"),
    )
}

fn toggle_commands(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    let button = "[data-testid=schedule-toggle][data-schedule=WEB]";
    if c.b.text_css(button)? != "WEB: Commands on" {
        return fail(format!("the toggle says {}", c.b.text_css(button)?));
    }
    c.b.click_css(button)?;
    if !c.b.alert_text()?.contains("off") {
        return fail("no question");
    }
    c.b.accept_alert()?;
    wait_for(10, || Ok(c.b.text_css(button)? == "WEB: Commands off"))?;
    let title = c.b.attr(&c.b.find(button)?, "title")?.unwrap_or_default();
    if !title.contains("switched off by web_ana at") {
        return fail(format!("title {title}"));
    }
    // The scheduler stops commanding: it says so.
    wait_for(15, || {
        Ok(
            c.sql_one("SELECT doing FROM pgjobs.routine_schedules WHERE schedule = 'WEB'")?
                .starts_with("observing"),
        )
    })?;
    c.b.click_css(button)?;
    c.b.accept_alert()?;
    wait_for(10, || Ok(c.b.text_css(button)? == "WEB: Commands on"))?;
    wait_for(15, || {
        Ok(
            c.sql_one("SELECT doing FROM pgjobs.routine_schedules WHERE schedule = 'WEB'")?
                .starts_with("controlling"),
        )
    })
}

fn was_running_banner(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    let pid = c.sql_one(
        "SELECT pid::text FROM pg_stat_activity WHERE backend_type = 'pg_jobs launcher'",
    )?;
    if pid.is_empty() {
        return fail("no launcher");
    }
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .map(|s| s.success())
    };
    if !signal("-STOP").unwrap_or(false) {
        return fail("cannot stop the launcher");
    }
    let banner = "[data-testid=banner-not-known][data-schedule=WEB]";
    let seen = wait_for(30, || {
        Ok(c.b.find_all(banner)?.len() == 1
            && c.rows("routine-row", "status")?
                .iter()
                .all(|s| s == "WAS RUNNING")
            && c.b
                .text_css(&format!("[data-group=FEEDS] {}", tid("group-status")))?
                == "WAS RUNNING")
    })
    .and_then(|()| {
        // The time the scheduler last wrote, as every time on the page is written.
        let since = format!("since {} UTC.", c.web_schedule_time("state_at", "UTC")?);
        let text = c.b.text_css(banner)?;
        if !text.contains(&since) || raw_iso_time(&text) {
            return fail(format!("the banner says {text}"));
        }
        // A warning (dark amber on pale yellow), not the quiet grey of a scheduled routine.
        let colours = c.js_str(&format!(
            "const s = getComputedStyle(document.querySelector('[data-group=FEEDS] {}'));
             return s.color + ' on ' + s.backgroundColor;",
            tid("group-status")
        ))?;
        if colours != "rgb(138, 75, 0) on rgb(255, 243, 205)" {
            return fail(format!("WAS RUNNING is {colours}"));
        }
        c.b.screenshot(&c.out.join("was-running.png"))
    });
    let _ = signal("-CONT");
    seen?;
    wait_for(20, || {
        Ok(c.b.find_all(&tid("banner-not-known"))?.is_empty())
    })
}

/// The Jobs tab grouped so, once it shows the group expected (of a month, or active now).
fn jobs_tab(c: &mut Ctx, grouping: &str, expect: &str, month: bool) -> Res<()> {
    c.fresh("?tab=jobs")?;
    c.open_filters()?;
    c.select("group-by", grouping)?;
    if month {
        let month = c.sql_one(
            "SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC'), 'YYYY-MM-DD')",
        )?;
        c.select("filter-month", &month)?;
    }
    wait_for(10, || {
        Ok(c.groups()?
            .iter()
            .any(|g| g.0 == expect || (grouping == "time" && g.0.ends_with(expect))))
    })
    .map_err(|e| format!("no group {expect} by {grouping}: {e}"))
}

fn jobs_show_more(c: &mut Ctx) -> Res<()> {
    jobs_tab(c, "time", " bulk", false)?;
    let key = c
        .groups()?
        .into_iter()
        .map(|g| g.0)
        .find(|k| k.ends_with(" bulk"))
        .ok_or("no group of bulk by time")?;
    if !c.b.find_all(&tid("job-row"))?.is_empty() {
        return fail("jobs were read before a group was opened");
    }
    c.b.click_css(&c.group_header(&key))?;
    wait_for(10, || Ok(c.b.find_all(&tid("job-row"))?.len() == 200))?;
    c.b.screenshot(&c.out.join("jobs.png"))?;
    c.b.click_css(&tid("job-group-more"))?;
    wait_for(10, || Ok(c.b.find_all(&tid("job-row"))?.len() == 250))?;
    c.b.find_all(&tid("job-group-more"))?
        .is_empty()
        .then_some(())
        .ok_or("Show more after the last".into())
}

fn open_job_group(c: &mut Ctx, key: &str, month: bool) -> Res<()> {
    jobs_tab(c, "routine", key, month)?;
    c.b.click_css(&c.group_header(key))?;
    wait_for(10, || {
        Ok(!c
            .b
            .find_all(&format!("[data-group=\"{key}\"] {}", tid("job-row")))?
            .is_empty())
    })
}

fn jobs_failed_line_and_details(c: &mut Ctx) -> Res<()> {
    wait_for(20, || Ok(c.job_status("routine = 'failing'")? == "ERROR"))?;
    open_job_group(c, "failing", true)?;
    let error = c.b.text_css(&tid("job-error"))?;
    if !error.contains("boom-failure") {
        return fail(format!("the line shows {error}"));
    }
    c.b.click_css(&tid("job-row"))?;
    wait_for(10, || c.visible("job-details"))?;
    let (computer, target, stderr) = (
        c.b.text_css(&tid("job-computer"))?,
        c.b.text_css(&tid("job-target"))?,
        c.b.text_css(&tid("job-stderr"))?,
    );
    (computer == "alpha" && target == "alpha" && stderr.contains("boom-failure"))
        .then_some(())
        .ok_or(format!(
            "may take {computer}, took {target}, stderr {stderr}"
        ))
}

fn jobs_details_mask_secrets(c: &mut Ctx) -> Res<()> {
    open_job_group(c, "secret", false)?;
    c.b.click_css(&tid("job-row"))?;
    wait_for(10, || c.visible("job-details"))?;
    let args = c.b.text_css(&tid("job-args"))?;
    let html = c.js_str("return document.documentElement.outerHTML;")?;
    (args == "--token ******** visible" && !html.contains("s3cr3t-tok"))
        .then_some(())
        .ok_or(format!("arguments {args}"))
}

fn jobs_cancel_group(c: &mut Ctx) -> Res<()> {
    jobs_tab(c, "routine", "cancelgroup", false)?;
    let button = format!("[data-group=cancelgroup] {}", tid("job-group-cancel"));
    if c.b.text_css(&button)? != "Cancel 3" {
        return fail(format!("the button says {}", c.b.text_css(&button)?));
    }
    c.b.click_css(&button)?;
    c.b.accept_alert()?;
    wait_for(10, || {
        Ok(c.job_status("routine = 'cancelgroup'")? == "CANCEL,CANCEL,CANCEL")
    })?;
    (c.job_status("routine = 'cancelall'")? == "WAITING,WAITING,WAITING")
        .then_some(())
        .ok_or("another group was cancelled".into())
}

fn jobs_cancel_all_filtered(c: &mut Ctx) -> Res<()> {
    jobs_tab(c, "routine", "cancelall", false)?;
    c.set_text_filter("cancelall")?;
    wait_for(10, || {
        Ok(c.b.text_css(&tid("jobs-cancel-all"))? == "Cancel all (3)")
    })?;
    c.b.click_css(&tid("jobs-cancel-all"))?;
    if !c.b.alert_text()?.contains("Cancel 3") {
        return fail("no question");
    }
    c.b.accept_alert()?;
    wait_for(10, || {
        Ok(c.job_status("routine = 'cancelall'")? == "CANCEL,CANCEL,CANCEL")
    })?;
    (c.job_status("routine = 'pickme'")? == "WAITING,WAITING,WAITING")
        .then_some(())
        .ok_or("more than the filtered list".into())
}

fn jobs_cancel_selected(c: &mut Ctx) -> Res<()> {
    open_job_group(c, "pickme", false)?;
    let ids = c.rows("job-row", "id")?;
    let boxes = c.b.find_all(&tid("job-select"))?;
    if ids.len() != 3 || boxes.len() != 3 {
        return fail(format!("{} rows, {} boxes", ids.len(), boxes.len()));
    }
    for id in &ids[..2] {
        c.b.click_css(&format!(
            "[data-testid=job-row][data-id=\"{id}\"] {}",
            tid("job-select")
        ))?;
    }
    wait_for(5, || {
        Ok(c.b.text_css(&tid("jobs-cancel-selected"))? == "Cancel selected (2)")
    })?;
    c.b.click_css(&tid("jobs-cancel-selected"))?;
    c.b.accept_alert()?;
    wait_for(10, || {
        Ok(
            c.job_status(&format!("id IN ({}, {})", ids[0], ids[1]))? == "CANCEL,CANCEL"
                && c.job_status(&format!("id = {}", ids[2]))? == "WAITING",
        )
    })
}

fn jobs_open_group_read_again(c: &mut Ctx) -> Res<()> {
    open_job_group(c, "pickme", false)?;
    let before = c.b.find_all(&tid("job-row"))?.len();
    let mut ana = c.as_role("web_ana")?;
    ana.execute(
        "SELECT pgjobs.batch_post('echo', ARRAY['pickme late'], computer => 'alpha', routine => 'pickme',
                run_at => now() + interval '1 hour')",
        &[],
    )
    .map_err(|e| e.to_string())?;
    wait_for(
        12,
        || Ok(c.b.find_all(&tid("job-row"))?.len() == before + 1),
    )
}

fn jobs_patched_in_place(c: &mut Ctx) -> Res<()> {
    open_job_group(c, "pickme", false)?;
    let first_box = format!("[data-group=pickme] {}", tid("job-select"));
    c.focus_survives_refresh(&first_box, "/api/jobs/group", "a job's box")
}

fn jobs_kill_job_labelled(c: &mut Ctx) -> Res<()> {
    let mut ana = c.as_role("web_ana")?;
    let posted = ana
        .query_one(
            "SELECT pgjobs.batch_post('echo', ARRAY['killtest run'], computer => 'alpha', routine => 'killtest',
                                      run_at => now() + interval '1 hour'),
                    pgjobs.batch_post('', kind => 'kill', routine => 'killtest', computer => 'alpha',
                                      run_at => now() + interval '1 hour')",
            &[],
        )
        .map_err(|e| e.to_string())?;
    let (run, kill): (i64, i64) = (posted.get(0), posted.get(1));
    open_job_group(c, "killtest", false)?;
    wait_for(10, || Ok(c.b.find_all(&tid("job-row"))?.len() == 2))?;
    let label = |id: i64| {
        format!(
            "[data-testid=job-row][data-id=\"{id}\"] {}",
            tid("job-kind")
        )
    };
    let kill_label = c.b.text_css(&label(kill))?;
    if kill_label != "kill" || !c.b.find_all(&label(run))?.is_empty() {
        return fail(format!(
            "the kill job is labelled {kill_label:?}, the run {:?}",
            c.b.find_all(&label(run))?
        ));
    }
    c.b.screenshot(&c.out.join("kill-job.png"))
}

fn jobs_groupings_and_months(c: &mut Ctx) -> Res<()> {
    jobs_tab(c, "status", "WAITING", false)?;
    let keys = |c: &Ctx| -> Res<Vec<String>> { Ok(c.groups()?.into_iter().map(|g| g.0).collect()) };
    wait_for(10, || Ok(keys(c)?.contains(&"WAITING".to_string())))?;
    c.select("group-by", "computer")?;
    wait_for(10, || Ok(keys(c)? == ["alpha"]))?;
    c.select("group-by", "plain")?;
    wait_for(10, || {
        Ok(c.b.find_all(&tid("job-row"))?.len() == 200 && c.visible("job-plain-total")?)
    })?;
    c.select("group-by", "status")?;
    // A month: every job due in it, finished ones too.
    let month =
        c.sql_one("SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC'), 'YYYY-MM-DD')")?;
    c.select("filter-month", &month)?;
    wait_for(10, || {
        let k = keys(c)?;
        Ok(k.contains(&"CANCEL".to_string())
            && k.contains(&"ERROR".to_string())
            && k.contains(&"WAITING".to_string()))
    })?;
    wait_for(5, || {
        Ok(c.b.text_css(&tid("filters-button"))? == "Filters · 1")
    })
}

fn text_size_remembered(c: &mut Ctx) -> Res<()> {
    c.fresh("")?;
    let size = |c: &Ctx| c.js_str("return document.documentElement.style.fontSize;");
    for _ in 0..3 {
        c.b.click_css(&tid("text-larger"))?;
    }
    if size(c)? != "130%" || c.b.text_css(&tid("text-size"))? != "130%" {
        return fail(format!("after + three times: {}", size(c)?));
    }
    c.b.refresh()?;
    wait_for(10, || Ok(size(c)? == "130%")).map_err(|e| format!("after a reload: {e}"))?;
    for _ in 0..12 {
        c.b.click_css(&tid("text-larger"))?;
    }
    let top = size(c)?;
    for _ in 0..20 {
        c.b.click_css(&tid("text-smaller"))?;
    }
    let bottom = size(c)?;
    (top == "200%" && bottom == "80%")
        .then_some(())
        .ok_or(format!("from {bottom} to {top}"))
}

fn cron_row(name: &str) -> String {
    format!("[data-testid=cron-row][data-name=\"{name}\"]")
}

/// The Schedules tab, read once: its schedules shown.
fn schedules_tab(c: &Ctx) -> Res<()> {
    c.js("localStorage.clear();")?;
    c.b.goto(&format!("{}/?tab=schedules", c.url))?;
    wait_for(10, || c.visible("app"))?;
    wait_for(10, || Ok(!c.rows("cron-row", "name")?.is_empty()))
}

/// Whether a job of web_ana's is one of a cron schedule's (its key names the schedule's slot).
fn of_schedule(name: &str) -> String {
    format!(
        "starts_with(idempotency_key, (SELECT format('scheduled_job:%s:', id) FROM pgjobs.schedules
                                        WHERE name = '{name}' AND owner = 'web_ana'::regrole))"
    )
}

/// The SQL job of web_ana's that started last and still runs (ana-sleep's, 30 s long).
fn running_sql_job(c: &mut Ctx) -> Res<String> {
    let newest = "SELECT job_id::text FROM pgjobs.job_runs
                  WHERE status = 'running' AND owner = 'web_ana'::regrole
                  ORDER BY started_at DESC LIMIT 1";
    wait_for(30, || Ok(!c.sql_one(newest)?.is_empty()))?;
    c.sql_one(newest)
}

fn sql_job_run_status(c: &mut Ctx, job: &str) -> Res<String> {
    c.sql_one(&format!(
        "SELECT status FROM pgjobs.job_runs WHERE job_id = {job} ORDER BY id DESC LIMIT 1"
    ))
}

fn schedules_tab_lists_the_roles_own(c: &mut Ctx) -> Res<()> {
    c.login_ok("web_ana")?;
    c.fresh("")?;
    c.press("4")?;
    wait_for(5, || Ok(c.active_tab()? == "schedules"))?;
    if !c.b.url()?.contains("tab=schedules") {
        return fail(format!("after key 4 the address is {}", c.b.url()?));
    }
    let mine = ["ana-nightly", "ana-sleep", "ana-ticks"];
    wait_for(10, || Ok(c.rows("cron-row", "name")? == mine))
        .map_err(|e| format!("rows {:?}: {e}", c.rows("cron-row", "name")))?;
    let count = c.b.text_css(&tid("tab-schedules-count"))?;
    if count != "3 schedules" {
        return fail(format!("the tab says {count}"));
    }
    let next = c.sql_one(
        "SELECT to_char(next_slot AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'
         FROM pgjobs.jobs_schedules WHERE name = 'ana-nightly'",
    )?;
    let nightly = |testid: &str| {
        c.b.text_css(&format!("{} {}", cron_row("ana-nightly"), tid(testid)))
    };
    let row = c.b.text_css(&cron_row("ana-nightly"))?;
    if nightly("cron-next")? != next
        || nightly("cron-missed")? != "all (the latest 3)"
        || !row.contains("Asia/Tokyo")
        || !row.contains("30 2 * * *")
        || !row.contains("report in queue web_ana_reports")
    {
        return fail(format!("ana-nightly's line: {row:?}, its next slot {next}"));
    }
    // ana-ticks has fired: its last job, and the slot it was fired for as every time is written.
    let ticks = |testid: &str| {
        c.b.text_css(&format!("{} {}", cron_row("ana-ticks"), tid(testid)))
    };
    wait_for(10, || {
        let fired = ticks("cron-last-fired")?;
        Ok(fired.ends_with(" UTC")
            && !raw_iso_time(&fired)
            && ticks("cron-last-run")?.starts_with('#'))
    })
    .map_err(|e| format!("ana-ticks' last fired {:?}: {e}", ticks("cron-last-fired")))?;
    if ticks("cron-missed")? != "once (one catch-up run)" {
        return fail(format!("ana-ticks' rule: {:?}", ticks("cron-missed")));
    }
    for query in ["?tab=4", "?tab=schedules"] {
        c.b.goto(&format!("{}/{query}", c.url))?;
        wait_for(10, || Ok(c.active_tab()? == "schedules")).map_err(|e| format!("{query}: {e}"))?;
    }
    // web_bob sees his own schedule only.
    c.login_ok("web_bob")?;
    schedules_tab(c)?;
    wait_for(10, || Ok(c.rows("cron-row", "name")? == ["bob-hourly"]))
        .map_err(|e| format!("web_bob sees {:?}: {e}", c.rows("cron-row", "name")))?;
    let html = c.js_str("return document.documentElement.outerHTML;")?;
    if html.contains("ana-") {
        return fail("web_bob's page names a schedule of web_ana's");
    }
    c.login_ok("web_ana")
}

fn schedules_disable_then_enable(c: &mut Ctx) -> Res<()> {
    let enabled = |c: &mut Ctx| {
        c.sql_one(
            "SELECT enabled::text FROM pgjobs.jobs_schedules
             WHERE name = 'ana-nightly' AND owner = 'web_ana'::regrole",
        )
    };
    schedules_tab(c)?;
    let row = cron_row("ana-nightly");
    confirm_after_a_dismissal(
        c,
        &format!("{row} {}", tid("cron-disable")),
        "Disable schedule ana-nightly?",
        |c| Ok(enabled(c)? == "true"),
    )?;
    wait_for(10, || Ok(enabled(c)? == "false"))?;
    wait_for(10, || {
        Ok(
            c.b.attr(&c.b.find(&row)?, "data-enabled")?.as_deref() == Some("false")
                && c.b.text_css(&format!("{row} {}", tid("cron-next")))? == "disabled",
        )
    })?;
    c.b.click_css(&format!("{row} {}", tid("cron-enable")))?;
    if !c
        .b
        .alert_text()?
        .starts_with("Enable schedule ana-nightly?")
    {
        return fail("no question before Enable");
    }
    c.b.accept_alert()?;
    wait_for(10, || Ok(enabled(c)? == "true"))?;
    wait_for(10, || {
        Ok(c.b.attr(&c.b.find(&row)?, "data-enabled")?.as_deref() == Some("true"))
    })
}

fn schedules_run_now(c: &mut Ctx) -> Res<()> {
    let last_job = |c: &mut Ctx| {
        c.sql_one(
            "SELECT coalesce(last_job_id::text, 'none') FROM pgjobs.schedules
             WHERE name = 'bob-hourly' AND owner = 'web_bob'::regrole",
        )
    };
    c.login_ok("web_bob")?;
    schedules_tab(c)?;
    let before = last_job(c)?;
    let row = cron_row("bob-hourly");
    confirm_after_a_dismissal(
        c,
        &format!("{row} {}", tid("cron-run-now")),
        "Run schedule bob-hourly now?",
        |c| Ok(last_job(c)? == before),
    )?;
    wait_for(10, || Ok(last_job(c)? != before))?;
    let job = last_job(c)?;
    let added = c.sql_one(&format!(
        "SELECT task || ' ' || (run_at <= now())::text || ' ' || owner::text FROM pgjobs.job_list WHERE id = {job}"
    ))?;
    if added != "bob-task true web_bob" {
        return fail(format!("the job run now is {added:?}"));
    }
    wait_for(10, || {
        Ok(c.b
            .text_css(&tid("notice"))?
            .contains(&format!("job {job} added")))
    })?;
    c.login_ok("web_ana")
}

/// The ids of a schedule's runs the page shows, newest first, checked against the database.
fn shown_runs_are_the_schedules(c: &mut Ctx, name: &str) -> Res<Vec<String>> {
    let ids = c.rows("cron-run", "id")?;
    let numbers: Vec<i64> = ids.iter().filter_map(|i| i.parse().ok()).collect();
    if numbers.is_empty() || numbers.windows(2).any(|w| w[0] <= w[1]) || numbers.len() > 20 {
        return fail(format!("{name}'s runs shown: {ids:?}"));
    }
    let list = ids.join(",");
    let theirs = c.sql_one(&format!(
        "SELECT count(*)::text FROM pgjobs.job_list WHERE id IN ({list}) AND {}",
        of_schedule(name)
    ))?;
    let newest = c.sql_one(&format!(
        "SELECT max(id)::text FROM pgjobs.job_list WHERE {}",
        of_schedule(name)
    ))?;
    if theirs != ids.len().to_string() {
        return fail(format!("of {ids:?} only {theirs} are {name}'s"));
    }
    Ok(vec![ids[0].clone(), newest])
}

fn schedules_run_history(c: &mut Ctx) -> Res<()> {
    schedules_tab(c)?;
    c.b.click_css(&cron_row("ana-ticks"))?;
    wait_for(10, || Ok(c.b.find_all(&tid("cron-run"))?.len() >= 2))?;
    // Read again every 5 s: the newest job shown is, at some point, the newest of the schedule.
    wait_for(15, || {
        let [shown, newest] =
            <[String; 2]>::try_from(shown_runs_are_the_schedules(c, "ana-ticks")?)
                .map_err(|_| "two ids")?;
        Ok(shown == newest)
    })?;
    // A queue job's run: how long it ran, from when a worker took it to its end, once its
    // completion is read (every 5 s). Every tick waiting is taken, so that the newest is shown.
    let mut ana = c.as_role("web_ana")?;
    let taken = ana
        .query_one(
            "SELECT array_agg(id)::text, array_agg(lease_token)::text, max(id)::text
             FROM pgjobs.jobs_claim('web', ARRAY['web_ana_ticks'], 1000)",
            &[],
        )
        .map_err(|e| format!("claiming the ticks: {e}"))?;
    let (ids, tokens, tick): (String, String, String) = (taken.get(0), taken.get(1), taken.get(2));
    ana.batch_execute(&format!(
        "SELECT pg_sleep(0.3); SELECT pgjobs.jobs_complete('{ids}'::bigint[], '{tokens}'::uuid[])"
    ))
    .map_err(|e| format!("completing the ticks: {e}"))?;
    let ran = format!(
        "[data-testid=cron-run][data-id=\"{tick}\"] {}",
        tid("cron-run-ran")
    );
    wait_for(15, || Ok(!c.b.find_all(&ran)?.is_empty()))
        .map_err(|e| format!("tick {tick} is not among ana-ticks' runs shown: {e}"))?;
    wait_for(10, || {
        let shown = c.b.text_css(&ran)?;
        Ok(shown.ends_with(" s") && !shown.contains("so far"))
    })
    .map_err(|e| format!("tick {tick} ran {:?}: {e}", c.b.text_css(&ran)))?;
    // A SQL job's runs come from job_runs: each with its attempt, outcome and time.
    c.b.click_css(&cron_row("ana-sleep"))?;
    wait_for(10, || {
        Ok(c.b
            .find_all(&format!("{} {}", cron_row("ana-ticks"), "+ tr"))?
            .is_empty()
            && !c.b.find_all(&tid("cron-run"))?.is_empty())
    })?;
    wait_for(10, || {
        shown_runs_are_the_schedules(c, "ana-sleep").map(|_| true)
    })?;
    let first = c.b.text_css(&tid("cron-run"))?;
    let job = c.rows("cron-run", "id")?[0].clone();
    let run = sql_job_run_status(c, &job)?;
    if !first.contains(&format!("attempt 1: {run}")) {
        return fail(format!(
            "the newest run of ana-sleep reads {first:?}, its run is {run}"
        ));
    }
    wait_for(30, || Ok(!c.b.find_all(&tid("sql-job-row"))?.is_empty()))?;
    c.b.screenshot(&c.out.join("schedules.png"))
}

fn sql_job_running_and_abort(c: &mut Ctx) -> Res<()> {
    schedules_tab(c)?;
    let job = running_sql_job(c)?;
    let row = format!("[data-testid=sql-job-row][data-id=\"{job}\"]");
    wait_for(10, || Ok(!c.b.find_all(&row)?.is_empty()))?;
    let sql = c.b.text_css(&format!("{row} {}", tid("sql-job-sql")))?;
    if sql != "SELECT pg_sleep(30)" {
        return fail(format!("the job's SQL reads {sql:?}"));
    }
    // Its elapsed time as the database counts it (the page reads it every 5 s).
    let shown = c.b.text_css(&format!("{row} {}", tid("sql-job-elapsed")))?;
    let elapsed: f64 = c
        .sql_one(&format!(
            "SELECT extract(epoch FROM now() - started_at)::text FROM pgjobs.job_runs
             WHERE job_id = {job} AND status = 'running'"
        ))?
        .parse()
        .map_err(|_| "the job no longer runs")?;
    let seconds: f64 = shown
        .strip_suffix(" s")
        .and_then(|n| n.parse().ok())
        .ok_or(format!("elapsed reads {shown:?}"))?;
    if seconds > elapsed + 1.0 || seconds < elapsed - 7.0 {
        return fail(format!(
            "elapsed reads {shown:?}; it has run {elapsed:.1} s"
        ));
    }
    let abort = format!("{row} {}", tid("sql-job-abort"));
    confirm_after_a_dismissal(c, &abort, &format!("Abort SQL job {job}?"), |c| {
        Ok(sql_job_run_status(c, &job)? == "running")
    })?;
    wait_for(15, || {
        Ok(c.sql_one(&format!(
            "SELECT status::text FROM pgjobs.job_list WHERE id = {job}"
        ))? == "aborted"
            && sql_job_run_status(c, &job)? == "aborted")
    })?;
    wait_for(10, || Ok(c.b.find_all(&row)?.is_empty()))
}

/// A POST refused before its body is read (here: from another site's page) is answered once the
/// body is in, and its connection then serves the next request. Answered at once, the body was
/// left unread and the server closed the connection after its answer, which a client that keeps
/// connections (this suite's) may already have taken for its next request: "peer disconnected".
fn refusal_reads_the_body_first(c: &mut Ctx) -> Res<()> {
    use std::io::{BufRead, BufReader, Write};
    let address = c.url.trim_start_matches("http://").trim_end_matches('/');
    let body = r#"{"name": "ana-nightly"}"#;
    // Refused by the origin, and by the token route of a server that takes no tokens.
    for (refusal, header, status) in [
        (
            "another site's POST",
            "Origin: http://evil.example",
            " 403 ",
        ),
        ("a token's POST", "Authorization: Bearer pgjobs_x", " 401 "),
    ] {
        let stream = std::net::TcpStream::connect(address).map_err(|e| e.to_string())?;
        let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream);
        let mut send = |text: &str| writer.write_all(text.as_bytes()).map_err(|e| e.to_string());
        send(&format!(
            "POST /api/cron/disable HTTP/1.1\r\nHost: {address}\r\n{header}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        ))?;
        // No answer while the body has not come (as from a slow client, or in a second packet).
        wait_on(&reader, 0.3)?;
        if reader.fill_buf().is_ok_and(|early| !early.is_empty()) {
            return fail(format!("{refusal} was answered before its body came"));
        }
        wait_on(&reader, 10.0)?;
        send(body)?;
        let (refused, why) = http_answer(&mut reader)?;
        if !refused.contains(status) {
            return fail(format!("{refusal}: {refused} {why}"));
        }
        send(&format!("GET /app.css HTTP/1.1\r\nHost: {address}\r\n\r\n"))?;
        let (next, _) = http_answer(&mut reader)
            .map_err(|e| format!("the next request on {refusal}'s connection: {e}"))?;
        if !next.contains(" 200 ") {
            return fail(format!(
                "the next request on {refusal}'s connection: {next}"
            ));
        }
    }
    Ok(())
}

/// Reads from `reader`'s connection wait at most `secs` seconds.
fn wait_on(reader: &std::io::BufReader<std::net::TcpStream>, secs: f64) -> Res<()> {
    reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs_f64(secs)))
        .map_err(|e| e.to_string())
}

/// The status line and the body of the next HTTP answer on `reader`'s connection.
fn http_answer(reader: &mut std::io::BufReader<std::net::TcpStream>) -> Res<(String, String)> {
    use std::io::{BufRead, Read};
    let (mut status, mut length) = (String::new(), 0usize);
    reader.read_line(&mut status).map_err(|e| e.to_string())?;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().map_err(|_| line.clone())?;
            }
        }
    }
    let mut content = vec![0; length];
    reader.read_exact(&mut content).map_err(|e| e.to_string())?;
    Ok((
        status.trim().to_string(),
        String::from_utf8_lossy(&content).into_owned(),
    ))
}

fn forged_schedule_actions_change_nothing(c: &mut Ctx) -> Res<()> {
    let job = running_sql_job(c)?;
    let (ana_cookie, ana_token) = http_login(&c.url, "web_ana")?;
    let (bob_cookie, bob_token) = http_login(&c.url, "web_bob")?;
    let page = Page::at(&c.url);
    let disable = (
        "/api/cron/disable",
        r#"{"name": "ana-nightly"}"#.to_string(),
    );
    let abort = ("/api/sql-jobs/abort", format!(r#"{{"id": {job}}}"#));
    let attempt = |(path, body): &(&str, String), cookie, token, content_type, origin| {
        page.request("POST", path, body, cookie, token, content_type, origin)
    };
    let json = "application/json";
    let tries = [
        (
            "bob disables ana-nightly",
            attempt(&disable, &bob_cookie, Some(&bob_token), json, None)?,
            400,
        ),
        (
            "bob aborts ana's SQL job",
            attempt(&abort, &bob_cookie, Some(&bob_token), json, None)?,
            400,
        ),
        (
            "ana's cookie, no token",
            attempt(&disable, &ana_cookie, None, json, None)?,
            403,
        ),
        (
            "ana's cookie, bob's token",
            attempt(&abort, &ana_cookie, Some(&bob_token), json, None)?,
            403,
        ),
        (
            "ana's cookie and token, as a form",
            attempt(&abort, &ana_cookie, Some(&ana_token), "text/plain", None)?,
            415,
        ),
        (
            "ana's cookie and token from another site's page",
            attempt(
                &disable,
                &ana_cookie,
                Some(&ana_token),
                json,
                Some("http://evil.example"),
            )?,
            403,
        ),
    ];
    for (what, (got, body), want) in &tries {
        if got != want {
            return fail(format!("{what}: {got} {body}, not {want}"));
        }
    }
    // The database refused web_bob: as for a schedule or a job that does not exist.
    for (what, (_, body), _) in &tries[..2] {
        if !body.contains("P0002") {
            return fail(format!("{what}: {body}"));
        }
    }
    let enabled = c.sql_one(
        "SELECT enabled::text FROM pgjobs.jobs_schedules WHERE name = 'ana-nightly' AND owner = 'web_ana'::regrole",
    )?;
    let run = sql_job_run_status(c, &job)?;
    (enabled == "true" && run == "running")
        .then_some(())
        .ok_or(format!(
            "ana-nightly enabled: {enabled}; the SQL job's run: {run}"
        ))
}

fn queue_row(queue: &str) -> String {
    format!("[data-testid=queue-row][data-queue=\"{queue}\"]")
}

fn queue_job_row(id: &str) -> String {
    format!("[data-testid=queue-job-row][data-id=\"{id}\"]")
}

/// One value as a web role reads it, through row-level security.
fn as_role_one(c: &Ctx, role: &str, sql: &str) -> Res<String> {
    let row = c
        .as_role(role)?
        .query_one(sql, &[])
        .map_err(|e| format!("{sql}: {e}"))?;
    Ok(row.get::<_, Option<String>>(0).unwrap_or_default())
}

/// A time of the database as the page writes it in UTC.
fn utc_text(c: &mut Ctx, time: &str) -> Res<String> {
    c.sql_one(&format!(
        "SELECT to_char(({time}) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'"
    ))
}

fn job_list_status(c: &mut Ctx, where_: &str) -> Res<String> {
    c.sql_one(&format!(
        "SELECT string_agg(status::text, ',' ORDER BY id) FROM pgjobs.job_list WHERE {where_}"
    ))
}

/// The Queues tab, read once: its queues shown.
fn queues_tab(c: &Ctx) -> Res<()> {
    c.js("localStorage.clear();")?;
    c.b.goto(&format!("{}/?tab=queues", c.url))?;
    wait_for(10, || c.visible("app"))?;
    wait_for(10, || Ok(!c.rows("queue-row", "queue")?.is_empty()))
}

/// The Queues tab with `queue` in its list: the tab lists the queues it has rows for as soon as
/// any is read, and a queue whose jobs were just added may come in a later read.
fn queue_listed(c: &Ctx, queue: &str) -> Res<()> {
    queues_tab(c)?;
    wait_for(10, || Ok(!c.b.find_all(&queue_row(queue))?.is_empty()))
}

/// The Queues tab with a queue's jobs shown.
fn open_queue(c: &Ctx, queue: &str) -> Res<()> {
    queue_listed(c, queue)?;
    c.b.click_css(&queue_row(queue))?;
    wait_for(10, || Ok(!c.b.find_all(&tid("queue-job-row"))?.is_empty()))
}

/// Types into one of the queue jobs' filters, as a person does (the page reads on input).
fn type_queue_filter(c: &Ctx, testid: &str, text: &str) -> Res<()> {
    let e = c.b.find(&tid(testid))?;
    c.b.clear(&e)?;
    c.b.type_into(&e, &format!("{text} \u{E003}"))?;
    c.blur()
}

/// The ids of web_ana's jobs in web_ana_mail, newest first, of a task and status.
fn mail_jobs(c: &mut Ctx, task: &str, status: &str) -> Res<Vec<String>> {
    let ids = c.sql_one(&format!(
        "SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM pgjobs.job_list
         WHERE queue = 'web_ana_mail' AND task = '{task}' AND status = '{status}'"
    ))?;
    Ok(ids
        .split(',')
        .filter(|i| !i.is_empty())
        .map(String::from)
        .collect())
}

fn queues_tab_lists_the_roles_own(c: &mut Ctx) -> Res<()> {
    c.login_ok("web_ana")?;
    c.fresh("")?;
    c.press("5")?;
    wait_for(5, || Ok(c.active_tab()? == "queues"))?;
    if !c.b.url()?.contains("tab=queues") {
        return fail(format!("after key 5 the address is {}", c.b.url()?));
    }
    let theirs = "SELECT string_agg(queue, ',' ORDER BY queue) FROM pgjobs.jobs_queues";
    // ana-ticks and ana-sleep add jobs meanwhile: the list shown is, at some point, hers.
    wait_for(15, || {
        let mine = as_role_one(c, "web_ana", theirs)?;
        let shown = c.rows("queue-row", "queue")?;
        let count = c.b.text_css(&tid("tab-queues-count"))?;
        Ok(shown.join(",") == mine && count == format!("{} queues", shown.len()))
    })
    .map_err(|e| format!("rows {:?}: {e}", c.rows("queue-row", "queue")))?;
    let shown = c.rows("queue-row", "queue")?;
    if !shown.iter().any(|q| q == "web_ana_mail") || shown.iter().any(|q| q.contains("bob")) {
        return fail(format!("web_ana's queues: {shown:?}"));
    }
    // web_ana_mail's counts as jobs_queues and job_history have them (no worker takes its jobs).
    let cell = |c: &Ctx, queue: &str, testid: &str| {
        c.b.text_css(&format!("{} {}", queue_row(queue), tid(testid)))
    };
    let counts = as_role_one(
        c,
        "web_ana",
        "SELECT concat_ws(',', ready, scheduled, waiting, running,
                          (SELECT count(*) FROM pgjobs.job_history h WHERE h.queue = q.queue
                             AND h.status = 'failed' AND h.end_time > now() - interval '1 hour'))
         FROM pgjobs.jobs_queues q WHERE q.queue = 'web_ana_mail'",
    )?;
    let shown_counts = [
        "queue-ready",
        "queue-scheduled",
        "queue-waiting",
        "queue-running",
        "queue-failed",
    ]
    .iter()
    .map(|t| cell(c, "web_ana_mail", t))
    .collect::<Res<Vec<_>>>()?
    .join(",");
    if shown_counts != counts || counts != "4,2,0,1,2" {
        return fail(format!(
            "web_ana_mail's ready, scheduled, waiting, running, failed: {shown_counts}; the database's {counts}"
        ));
    }
    let oldest = utc_text(
        c,
        "SELECT min(run_at) FROM pgjobs.jobs WHERE queue = 'web_ana_mail' AND status = 'created' AND run_at <= now()",
    )?;
    let title =
        c.b.attr(
            &c.b.find(&format!(
                "{} {}",
                queue_row("web_ana_mail"),
                tid("queue-oldest")
            ))?,
            "title",
        )?
        .unwrap_or_default();
    let age = cell(c, "web_ana_mail", "queue-oldest")?;
    if title != format!("ready since {oldest}") || !age.ends_with(" s") {
        return fail(format!(
            "the oldest ready job: {age:?}, {title:?}; ready since {oldest}"
        ));
    }
    let limits = cell(c, "web_ana_mail", "queue-limits")?;
    if limits
        != "4 running at most · 100 claims per 1 min · 2 per key · trial: 5 claims per key per 1 h · vip: 1 per key, in order"
    {
        return fail(format!("web_ana_mail's limits: {limits:?}"));
    }
    // web_ana_reports is paused: by whom and when, as every time is written.
    let paused_at = utc_text(
        c,
        "SELECT paused_at FROM pgjobs.queue_pauses WHERE queue = 'web_ana_reports' AND owner = 'web_ana'::regrole",
    )?;
    let paused = cell(c, "web_ana_reports", "queue-paused")?;
    if paused != format!("paused by web_ana at {paused_at}")
        || c.b
            .find_all(&format!(
                "{} {}",
                queue_row("web_ana_reports"),
                tid("queue-resume")
            ))?
            .is_empty()
    {
        return fail(format!(
            "web_ana_reports: {paused:?}, paused at {paused_at}"
        ));
    }
    for query in ["?tab=5", "?tab=queues"] {
        c.b.goto(&format!("{}/{query}", c.url))?;
        wait_for(10, || Ok(c.active_tab()? == "queues")).map_err(|e| format!("{query}: {e}"))?;
    }
    // web_bob sees his own queues only.
    c.login_ok("web_bob")?;
    queues_tab(c)?;
    wait_for(10, || {
        Ok(c.rows("queue-row", "queue")?.join(",") == as_role_one(c, "web_bob", theirs)?)
    })
    .map_err(|e| format!("web_bob sees {:?}: {e}", c.rows("queue-row", "queue")))?;
    let html = c.js_str("return document.documentElement.outerHTML;")?;
    if !c
        .rows("queue-row", "queue")?
        .contains(&"web_bob_mail".to_string())
        || html.contains("web_ana")
    {
        return fail("web_bob's page names a queue of web_ana's, or not his own");
    }
    c.login_ok("web_ana")
}

fn queues_pause_then_resume(c: &mut Ctx) -> Res<()> {
    let paused_at = |c: &Ctx| {
        as_role_one(
            c,
            "web_ana",
            "SELECT coalesce(paused_at::text, 'not paused') FROM pgjobs.jobs_queues WHERE queue = 'web_ana_mail'",
        )
    };
    queues_tab(c)?;
    let row = queue_row("web_ana_mail");
    confirm_after_a_dismissal(
        c,
        &format!("{row} {}", tid("queue-pause")),
        "Pause queue web_ana_mail?",
        |c| Ok(paused_at(c)? == "not paused"),
    )?;
    wait_for(10, || Ok(paused_at(c)? != "not paused"))?;
    wait_for(10, || {
        Ok(
            c.b.attr(&c.b.find(&row)?, "data-paused")?.as_deref() == Some("true")
                && c.b
                    .text_css(&format!("{row} {}", tid("queue-paused")))?
                    .starts_with("paused by web_ana at "),
        )
    })?;
    c.b.click_css(&format!("{row} {}", tid("queue-resume")))?;
    if !c.b.alert_text()?.starts_with("Resume queue web_ana_mail?") {
        return fail("no question before Resume");
    }
    c.b.accept_alert()?;
    wait_for(10, || Ok(paused_at(c)? == "not paused"))?;
    wait_for(10, || {
        Ok(c.b.attr(&c.b.find(&row)?, "data-paused")?.as_deref() == Some("false"))
    })
}

fn queue_jobs_filter_by_status_and_text(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_mail")?;
    let all = c.sql_one(
        "SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM pgjobs.job_list WHERE queue = 'web_ana_mail'",
    )?;
    let shown = |c: &Ctx| c.rows("queue-job-row", "id").map(|r| r.join(","));
    wait_for(10, || Ok(shown(c)? == all))
        .map_err(|e| format!("shown {:?}, the queue's {all}: {e}", shown(c)))?;
    c.select("queue-job-status", "failed")?;
    let failed = mail_jobs(c, "bounce", "failed")?.join(",");
    wait_for(10, || Ok(shown(c)? == failed))
        .map_err(|e| format!("failed: shown {:?}, the failed {failed}: {e}", shown(c)))?;
    if c.rows("queue-job-row", "status")?
        .iter()
        .any(|s| s != "failed")
    {
        return fail("a job not failed among the failed");
    }
    c.select("queue-job-status", "")?;
    type_queue_filter(c, "queue-job-text", "ana-2@")?;
    let second = c.sql_one(
        "SELECT id::text FROM pgjobs.job_list WHERE queue = 'web_ana_mail' AND payload ->> 'to' = 'ana-2@example.org'",
    )?;
    wait_for(10, || Ok(shown(c)? == second))
        .map_err(|e| format!("text ana-2@: shown {:?}, not {second}: {e}", shown(c)))?;
    // The filter kept what was typed and the focus through a refresh.
    c.focus_survives_refresh(&tid("queue-job-text"), "/api/queues", "the text filter")?;
    let typed = c.js_str(&format!(
        "return document.querySelector('{}').value;",
        tid("queue-job-text")
    ))?;
    (typed == "ana-2@")
        .then_some(())
        .ok_or(format!("the text filter reads {typed:?} after a refresh"))
}

fn queue_jobs_show_more(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_bulk")?;
    wait_for(10, || Ok(c.b.find_all(&tid("queue-job-row"))?.len() == 200))?;
    c.b.click_css(&tid("queue-jobs-more"))?;
    wait_for(10, || Ok(c.b.find_all(&tid("queue-job-row"))?.len() == 250))?;
    // Every page read is read again every 5 s, and nothing is shown twice.
    c.count_reads("/api/queues/jobs")?;
    c.wait_refreshed()?;
    let ids = c.rows("queue-job-row", "id")?;
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    if ids.len() != 250 || distinct.len() != 250 {
        return fail(format!(
            "{} rows, {} distinct, after a refresh",
            ids.len(),
            distinct.len()
        ));
    }
    c.b.find_all(&tid("queue-jobs-more"))?
        .is_empty()
        .then_some(())
        .ok_or("Show more after the last".into())
}

fn queue_job_details(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_mail")?;
    let bounce = mail_jobs(c, "bounce", "failed")?;
    let Some(job) = bounce.first() else {
        return fail("no failed bounce job");
    };
    c.b.click_css(&queue_job_row(job))?;
    wait_for(10, || c.visible("queue-job-details"))?;
    // Each error with its attempt and time as the page writes times.
    let errors = c.sql_one(&format!(
        "SELECT string_agg(format('attempt %s at %s UTC: %s', e ->> 'attempt',
                                  to_char((e ->> 'at')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
                                  e ->> 'error'), E'\\n' ORDER BY (e ->> 'attempt')::int)
         FROM pgjobs.job_list l, jsonb_array_elements(l.errors) e WHERE l.id = {job}"
    ))?;
    let detail = |c: &Ctx, testid: &str| {
        c.b.text_css(&format!("{} {}", tid("queue-job-details"), tid(testid)))
    };
    let shown = detail(c, "queue-job-errors")?;
    if shown != errors || !errors.contains("smtp down (attempt 2)") {
        return fail(format!("errors shown {shown:?}, the job's {errors:?}"));
    }
    let (payload, attempts, locked_by, result) = (
        detail(c, "queue-job-payload")?,
        detail(c, "queue-job-attempts")?,
        detail(c, "queue-job-locked-by")?,
        detail(c, "queue-job-result")?,
    );
    if !payload.contains("\"to\": \"gone-")
        || attempts != "2 of 2"
        || locked_by != "mail-worker-1"
        || !result.contains("smtp down (attempt 2)")
    {
        return fail(format!(
            "payload {payload:?}, attempts {attempts:?}, locked by {locked_by:?}, result {result:?}"
        ));
    }
    c.b.screenshot(&c.out.join("queues.png"))?;
    // The running job: its worker and its progress.
    let running = mail_jobs(c, "send", "started")?;
    c.b.click_css(&queue_job_row(
        running.first().ok_or("no running send job")?,
    ))?;
    wait_for(10, || {
        Ok(detail(c, "queue-job-progress")?.contains("\"sent\": 3")
            && detail(c, "queue-job-locked-by")? == "mail-worker-1")
    })
    .map_err(|e| {
        format!(
            "the running job's progress {:?}: {e}",
            detail(c, "queue-job-progress")
        )
    })?;
    // A waiting job's concurrency key.
    let welcome = mail_jobs(c, "welcome", "created")?;
    let waiting = welcome.first().ok_or("no waiting welcome job")?;
    let key = c.sql_one(&format!(
        "SELECT concurrency_key FROM pgjobs.jobs WHERE id = {waiting}"
    ))?;
    c.b.click_css(&queue_job_row(waiting))?;
    wait_for(10, || Ok(detail(c, "queue-job-concurrency-key")? == key)).map_err(|e| {
        format!(
            "concurrency key {:?}, not {key}: {e}",
            detail(c, "queue-job-concurrency-key")
        )
    })
}

fn queue_job_abort_and_retry(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_mail")?;
    let welcome = mail_jobs(c, "welcome", "created")?;
    let job = welcome.last().ok_or("no waiting welcome job")?.clone();
    let abort = format!("{} {}", queue_job_row(&job), tid("queue-job-abort"));
    confirm_after_a_dismissal(c, &abort, &format!("Abort job {job} (welcome)?"), |c| {
        Ok(job_list_status(c, &format!("id = {job}"))? == "created")
    })?;
    wait_for(10, || {
        Ok(job_list_status(c, &format!("id = {job}"))? == "aborted")
    })?;
    wait_for(10, || {
        Ok(c.b
            .attr(&c.b.find(&queue_job_row(&job))?, "data-status")?
            .as_deref()
            == Some("aborted")
            && c.b.text_css(&tid("notice"))? == "1 job aborted")
    })?;
    // A failed job brought back: the same id, waiting again.
    let failed = mail_jobs(c, "bounce", "failed")?;
    let job = failed.last().ok_or("no failed bounce job")?.clone();
    let retry = format!("{} {}", queue_job_row(&job), tid("queue-job-retry"));
    c.b.click_css(&retry)?;
    if !c
        .b
        .alert_text()?
        .starts_with(&format!("Retry job {job} (bounce)?"))
    {
        return fail("no question before Retry");
    }
    c.b.accept_alert()?;
    wait_for(10, || {
        Ok(c.sql_one(&format!(
            "SELECT status::text FROM pgjobs.jobs WHERE id = {job}"
        ))? == "created")
    })?;
    wait_for(10, || {
        Ok(c.b
            .attr(&c.b.find(&queue_job_row(&job))?, "data-live")?
            .as_deref()
            == Some("true")
            && c.b.text_css(&tid("notice"))? == "1 job brought back")
    })
}

/// Ticks jobs `ids` on their lines, then acts with the bulk button `button` (press_and_confirm).
fn act_on_ticked(c: &mut Ctx, ids: &[&str], button: &str, label: &str, question: &str) -> Res<()> {
    for id in ids {
        wait_for(10, || Ok(!c.b.find_all(&queue_job_row(id))?.is_empty()))?;
        c.b.click_css(&format!("{} {}", queue_job_row(id), tid("queue-job-tick")))?;
    }
    press_and_confirm(c, button, label, question)
}

fn queue_jobs_bulk_abort_and_retry(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_mail")?;
    let welcome = mail_jobs(c, "welcome", "created")?;
    if welcome.len() < 3 {
        return fail(format!("waiting welcome jobs: {welcome:?}"));
    }
    let (ticked, left) = (&welcome[..2], &welcome[2]);
    let ticked: Vec<&str> = ticked.iter().map(String::as_str).collect();
    act_on_ticked(
        c,
        &ticked,
        "queue-jobs-abort-ticked",
        "Abort ticked (2)",
        "Abort 2 ticked jobs?",
    )?;
    let both = format!("id IN ({})", ticked.join(", "));
    wait_for(10, || Ok(job_list_status(c, &both)? == "aborted,aborted"))?;
    if job_list_status(c, &format!("id = {left}"))? != "created" {
        return fail("a job not ticked was aborted");
    }
    wait_for(10, || Ok(c.b.text_css(&tid("notice"))? == "2 jobs aborted"))?;
    // The two aborted ones, ticked again, brought back together.
    wait_for(10, || {
        Ok(ticked.iter().all(|id| {
            c.b.find_all(&format!("{} {}", queue_job_row(id), tid("queue-job-retry")))
                .is_ok_and(|f| !f.is_empty())
        }))
    })?;
    act_on_ticked(
        c,
        &ticked,
        "queue-jobs-retry-ticked",
        "Retry ticked (2)",
        "Retry 2 ticked jobs?",
    )?;
    wait_for(10, || Ok(job_list_status(c, &both)? == "created,created"))?;
    wait_for(10, || {
        Ok(c.b.text_css(&tid("notice"))? == "2 jobs brought back")
    })
}

fn queue_jobs_run_now(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_mail")?;
    let later = c.sql_one(
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs
         WHERE queue = 'web_ana_mail' AND task = 'digest' AND status = 'created' AND run_at > now()",
    )?;
    let later: Vec<&str> = later.split(',').filter(|i| !i.is_empty()).collect();
    let [first, second] = later[..] else {
        return fail(format!("digest jobs waiting for their time: {later:?}"));
    };
    let times = |c: &mut Ctx, id: &str| {
        c.sql_one(&format!(
            "SELECT (run_at <= now())::text || ' ' || due_at::text FROM pgjobs.jobs WHERE id = {id}"
        ))
    };
    let (first_before, second_before) = (times(c, first)?, times(c, second)?);
    // From its details: due now, when it was first due kept.
    c.b.click_css(&queue_job_row(first))?;
    let run_now = format!("{} {}", tid("queue-job-details"), tid("queue-job-run-now"));
    wait_for(10, || Ok(!c.b.find_all(&run_now)?.is_empty()))?;
    confirm_after_a_dismissal(
        c,
        &run_now,
        &format!("Run job {first} (digest) now?"),
        |c| Ok(times(c, first)? == first_before),
    )?;
    let due_now = first_before.replacen("false", "true", 1);
    wait_for(10, || Ok(times(c, first)? == due_now))
        .map_err(|e| format!("job {first} after Run now: {:?}: {e}", times(c, first)))?;
    wait_for(10, || {
        Ok(c.b.text_css(&tid("notice"))? == "1 job due now" && c.b.find_all(&run_now)?.is_empty())
    })?;
    // Ticked beside a ready job: only the one waiting for its time is counted and moved.
    let ready = mail_jobs(c, "welcome", "created")?;
    let ready = ready.first().ok_or("no waiting welcome job")?;
    let ready_before = times(c, ready)?;
    act_on_ticked(
        c,
        &[second, ready.as_str()],
        "queue-jobs-run-ticked",
        "Run ticked now (1)",
        &format!("Run job {second} (digest) now?"),
    )?;
    let due_now = second_before.replacen("false", "true", 1);
    wait_for(10, || Ok(times(c, second)? == due_now))?;
    wait_for(10, || Ok(c.b.text_css(&tid("notice"))? == "1 job due now"))?;
    if times(c, ready)? != ready_before {
        return fail(format!(
            "the ready job moved: {ready_before} -> {}",
            times(c, ready)?
        ));
    }
    Ok(())
}

fn queue_jobs_delete(c: &mut Ctx) -> Res<()> {
    let added = as_role_one(
        c,
        "web_ana",
        "SELECT string_agg(pgjobs.jobs_add('cleanup', queue => 'web_ana_mail', key => 'cleanup:' || i,
                                           run_at => now() + interval '1 day')::text, ',' ORDER BY i)
         FROM generate_series(1, 3) i",
    )?;
    let added: Vec<&str> = added.split(',').collect();
    let [one, ticked @ ..] = &added[..] else {
        return fail("no cleanup jobs added");
    };
    let kept = |c: &mut Ctx, ids: &str| {
        c.sql_one(&format!(
            "SELECT (SELECT count(*) FROM pgjobs.job_list WHERE id IN ({ids}))
                    || ' ' || (SELECT count(*) FROM pgjobs.job_keys WHERE job_id IN ({ids}))"
        ))
    };
    open_queue(c, "web_ana_mail")?;
    // From its details: gone from the queue and from history, its key free.
    wait_for(10, || Ok(!c.b.find_all(&queue_job_row(one))?.is_empty()))?;
    c.b.click_css(&queue_job_row(one))?;
    let delete = format!("{} {}", tid("queue-job-details"), tid("queue-job-delete"));
    wait_for(10, || Ok(!c.b.find_all(&delete)?.is_empty()))?;
    confirm_after_a_dismissal(c, &delete, &format!("Delete job {one} (cleanup)?"), |c| {
        Ok(kept(c, one)? == "1 1")
    })?;
    wait_for(10, || Ok(kept(c, one)? == "0 0"))?;
    wait_for(10, || {
        Ok(c.b.text_css(&tid("notice"))? == "1 job deleted"
            && c.b.find_all(&queue_job_row(one))?.is_empty())
    })?;
    // Two ticked, deleted together.
    act_on_ticked(
        c,
        ticked,
        "queue-jobs-delete-ticked",
        "Delete ticked (2)",
        "Delete 2 ticked jobs?",
    )?;
    let both = ticked.join(", ");
    wait_for(10, || Ok(kept(c, &both)? == "0 0"))?;
    wait_for(10, || Ok(c.b.text_css(&tid("notice"))? == "2 jobs deleted"))
}

/// Clicks `button` (an action on ticked jobs or a filter's, a queue's limits) once it reads
/// `label`, and accepts its question, which must start with `question`.
fn press_and_confirm(c: &mut Ctx, button: &str, label: &str, question: &str) -> Res<()> {
    wait_for(10, || Ok(c.b.text_css(&tid(button))? == label))
        .map_err(|e| format!("{button} reads {:?}: {e}", c.b.text_css(&tid(button))))?;
    c.b.click_css(&tid(button))?;
    let asked = c.b.alert_text()?;
    if !asked.starts_with(question) {
        return fail(format!("{button} asked {asked:?}"));
    }
    c.b.accept_alert()
}

fn queue_jobs_act_on_filter(c: &mut Ctx) -> Res<()> {
    as_role_one(
        c,
        "web_ana",
        "SELECT count(pgjobs.jobs_add('tidy', jsonb_build_object('parity', CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END),
                                      queue => 'web_ana_tidy', run_at => now() + interval '1 day'))::text
         FROM generate_series(1, 12) i",
    )?;
    // Of each parity: waiting for their time, due now.
    let parities = |c: &mut Ctx| {
        c.sql_one(
            "SELECT coalesce(string_agg(format('%s %s %s', parity, jobs, due), ', ' ORDER BY parity), '')
             FROM (SELECT payload ->> 'parity' AS parity, count(*) AS jobs, count(*) FILTER (WHERE run_at <= now()) AS due
                   FROM pgjobs.jobs WHERE queue = 'web_ana_tidy' GROUP BY 1) p",
        )
    };
    queues_tab(c)?;
    open_queue(c, "web_ana_tidy")?;
    type_queue_filter(c, "queue-job-text", "odd")?;
    wait_for(10, || Ok(c.b.find_all(&tid("queue-job-row"))?.len() == 6))?;
    press_and_confirm(
        c,
        "queue-jobs-run-all",
        "Run all now (6)",
        "Run the 6 jobs of this filter now?",
    )?;
    wait_for(10, || Ok(parities(c)? == "even 6 0, odd 6 6"))
        .map_err(|e| format!("after Run all now: {:?}: {e}", parities(c)))?;
    wait_for(10, || Ok(c.b.text_css(&tid("notice"))? == "6 jobs due now"))?;
    press_and_confirm(
        c,
        "queue-jobs-delete-all",
        "Delete all (6)",
        "Delete the 6 jobs of this filter?",
    )?;
    wait_for(10, || Ok(parities(c)? == "even 6 0"))
        .map_err(|e| format!("after Delete all: {:?}: {e}", parities(c)))?;
    wait_for(10, || Ok(c.b.text_css(&tid("notice"))? == "6 jobs deleted"))?;
    // The filter finds no job now: nothing to act on.
    wait_for(10, || {
        Ok(c.b.text_css(&tid("queue-jobs-abort-all"))? == "Abort all (0)")
    })?;
    type_queue_filter(c, "queue-job-text", "")?;
    press_and_confirm(
        c,
        "queue-jobs-abort-all",
        "Abort all (6)",
        "Abort the 6 jobs of this filter?",
    )?;
    wait_for(10, || Ok(parities(c)?.is_empty()))?;
    let ended = c.sql_one(
        "SELECT string_agg(DISTINCT status::text, ',') FROM pgjobs.job_history WHERE queue = 'web_ana_tidy'",
    )?;
    (ended == "aborted")
        .then_some(())
        .ok_or(format!("web_ana_tidy's ended jobs: {ended}"))
}

fn queue_charts_count_completions_and_failures(c: &mut Ctx) -> Res<()> {
    // Two completed, one failed attempt with attempts left and one failing its last: the
    // minute under way's counts (shared memory) or, once the launcher wrote the minute down,
    // its row; either way the last hour's sums.
    as_role_one(
        c,
        "web_ana",
        "SELECT count(pgjobs.jobs_add('chart', queue => 'web_ana_charted', max_attempts => 1 + i % 2, backoff => '1 hour'))::text
         FROM generate_series(1, 4) i",
    )?;
    as_role_one(
        c,
        "web_ana",
        "WITH c AS (SELECT * FROM pgjobs.jobs_claim('w', ARRAY['web_ana_charted'], 4) ORDER BY id)
         SELECT count(*)::text FROM (
             SELECT CASE WHEN row_number() OVER () <= 2 THEN pgjobs.jobs_complete(id, lease_token)::text
                         ELSE pgjobs.jobs_fail(id, lease_token, 'no')::text END
             FROM c) done",
    )?;
    open_queue_without_jobs(c, "web_ana_charted")?;
    let done = tid("queue-chart-done");
    let sums = |c: &Ctx| -> Res<String> {
        let chart = c.b.find(&done)?;
        Ok(format!(
            "{} completed, {} failed",
            c.b.attr(&chart, "data-completed")?.unwrap_or_default(),
            c.b.attr(&chart, "data-failed")?.unwrap_or_default()
        ))
    };
    wait_for(10, || Ok(sums(c)? == "2 completed, 2 failed"))
        .map_err(|e| format!("the last hour: {:?}: {e}", sums(c)))?;
    // Drawn: the bars have a height on the screen.
    let drawn = c.js(
        "return [...document.querySelectorAll('[data-testid=queue-chart-done] rect.completed')]
             .some((r) => r.getBoundingClientRect().height > 0);",
    )?;
    if drawn != json!(true) {
        return fail("no completion is drawn");
    }
    // 60 bars of a minute; then the last day, 144 of 10 minutes, with the same sums.
    let bars = |c: &Ctx| c.b.find_all(&format!("{done} .bar")).map(|b| b.len());
    if bars(c)? != 60 {
        return fail(format!("the last hour has {:?} bars", bars(c)));
    }
    c.b.click_css(&tid("queue-chart-day"))?;
    wait_for(10, || {
        Ok(bars(c)? == 144 && sums(c)? == "2 completed, 2 failed")
    })
    .map_err(|e| format!("the last day: {:?} bars, {:?}: {e}", bars(c), sums(c)))?;
    // web_bob's charts of a queue of the same name show none of it.
    let (bob_cookie, _) = http_login(&c.url, "web_bob")?;
    let (status, body) = Page::at(&c.url).request(
        "GET",
        "/api/queues/minutes?queue=web_ana_charted&hours=24",
        "",
        &bob_cookie,
        None,
        "",
        None,
    )?;
    (status == 200 && body == "[]").then_some(()).ok_or(format!(
        "web_bob's minutes of web_ana_charted: {status} {body}"
    ))
}

/// The Queues tab with a queue opened that may have no job to list.
fn open_queue_without_jobs(c: &Ctx, queue: &str) -> Res<()> {
    queue_listed(c, queue)?;
    c.b.click_css(&queue_row(queue))?;
    wait_for(10, || c.visible("queue-charts"))
}

fn queues_counted_by_minute_when_counting_takes_long(c: &mut Ctx) -> Res<()> {
    // Counting the live jobs now waits on a lock here, as it takes long at a million jobs:
    // the counts come from the last minute written, and say so.
    let (cookie, _) = http_login(&c.url, "web_ana")?;
    let mut holder =
        postgres::Client::connect(&c.admin_dsn, postgres::NoTls).map_err(|e| e.to_string())?;
    let mut held = holder.transaction().map_err(|e| e.to_string())?;
    held.batch_execute("LOCK pgjobs.jobs IN ACCESS EXCLUSIVE MODE")
        .map_err(|e| e.to_string())?;
    let answer = Page::at(&c.url).request("GET", "/api/queues", "", &cookie, None, "", None);
    held.rollback().map_err(|e| e.to_string())?;
    let (status, body) = answer?;
    let queues: Value = serde_json::from_str(&body).map_err(|e| format!("{status} {body}: {e}"))?;
    let rows = queues.as_array().cloned().unwrap_or_default();
    let written = as_role_one(
        c,
        "web_ana",
        "SELECT count(*)::text FROM pgjobs.jobs_queues_counted",
    )?;
    (status == 200
        && rows.len().to_string() == written
        && rows.iter().all(|q| q["counted_by_minute"] == json!(true)))
    .then_some(())
    .ok_or(format!(
        "/api/queues while jobs is locked: {status} {body}; {written} queues written"
    ))
}

/// Fills the queue's limit form and presses Set, accepting its question, which must start so.
fn set_queue_limit(c: &mut Ctx, kind: &str, fields: &[(&str, &str)], question: &str) -> Res<()> {
    c.select("queue-limit-kind", kind)?;
    for (testid, value) in fields {
        let e = c.b.find(&tid(testid))?;
        c.b.clear(&e)?;
        c.b.type_into(&e, value)?;
    }
    press_and_confirm(c, "queue-limit-set", "Set", question)
}

fn queue_limits_set_and_lifted(c: &mut Ctx) -> Res<()> {
    let limits = |c: &Ctx| {
        as_role_one(
            c,
            "web_ana",
            "SELECT format('%s %s/%s %s %s', coalesce(max_running::text, '-'), coalesce(rate_claims::text, '-'),
                          coalesce(extract(epoch FROM rate_per)::text, '-'), coalesce(max_per_key::text, '-'),
                          coalesce((SELECT string_agg(format('%s %s%s', x ->> 'prefix', x ->> 'max_per_key',
                                                             CASE WHEN (x ->> 'ordered')::boolean THEN ' in order' END), ',')
                                    FROM jsonb_array_elements(key_prefix_limits) x), '-'))
             FROM pgjobs.jobs_queues WHERE queue = 'web_ana_bulk'",
        )
    };
    let shown = |c: &Ctx| {
        c.b.text_css(&format!(
            "{} {}",
            queue_row("web_ana_bulk"),
            tid("queue-limits")
        ))
    };
    open_queue(c, "web_ana_bulk")?;
    set_queue_limit(
        c,
        "running",
        &[("queue-limit-n", "3")],
        "Limit queue web_ana_bulk to 3 jobs running at once?",
    )?;
    wait_for(10, || Ok(limits(c)? == "3 -/- - -"))
        .map_err(|e| format!("after the running limit: {:?}: {e}", limits(c)))?;
    set_queue_limit(
        c,
        "rate",
        &[("queue-limit-n", "5"), ("queue-limit-per", "60")],
        "Limit queue web_ana_bulk to 5 claims per 60 s?",
    )?;
    c.js(&format!(
        "document.querySelector('{}').checked = true;",
        tid("queue-limit-ordered")
    ))?;
    set_queue_limit(
        c,
        "key",
        &[("queue-limit-n", "1"), ("queue-limit-prefix", "vip:")],
        "Limit queue web_ana_bulk to 1 jobs of each key starting with vip: at once, in order?",
    )?;
    let all = "3 5/60.000000 - vip: 1 in order";
    wait_for(10, || Ok(limits(c)? == all))
        .map_err(|e| format!("after three limits: {:?}: {e}", limits(c)))?;
    wait_for(10, || {
        Ok(shown(c)? == "3 running at most · 5 claims per 1 min · vip: 1 per key, in order")
    })
    .map_err(|e| format!("the page shows {:?}: {e}", shown(c)))?;
    // Bad input: the database's error is shown, and nothing changes.
    set_queue_limit(
        c,
        "running",
        &[("queue-limit-n", "0")],
        "Limit queue web_ana_bulk to 0 jobs running at once?",
    )?;
    wait_for(10, || {
        Ok(c.visible("error")? && c.b.text_css(&tid("error"))?.starts_with("22023: "))
    })
    .map_err(|e| format!("the error box: {:?}: {e}", c.b.text_css(&tid("error"))))?;
    if limits(c)? != all {
        return fail(format!("a refused limit changed them: {:?}", limits(c)));
    }
    // web_bob's limit of a queue of that name limits his own identity's, not web_ana's.
    let (bob_cookie, bob_token) = http_login(&c.url, "web_bob")?;
    let (status, body) = Page::at(&c.url).request(
        "POST",
        "/api/queues/limit",
        r#"{"queue": "web_ana_bulk", "max_running": 1}"#,
        &bob_cookie,
        Some(&bob_token),
        "application/json",
        None,
    )?;
    let bobs = as_role_one(
        c,
        "web_bob",
        "SELECT max_running::text FROM pgjobs.jobs_queues WHERE queue = 'web_ana_bulk'",
    )?;
    if status != 200 || bobs != "1" || limits(c)? != all {
        return fail(format!(
            "web_bob's limit: {status} {body}; his {bobs}; web_ana's {:?}",
            limits(c)
        ));
    }
    as_role_one(
        c,
        "web_bob",
        "SELECT pgjobs.jobs_unlimit('web_ana_bulk')::text",
    )?;
    // The keys of vip: lifted, then every limit.
    c.select("queue-limit-kind", "key")?;
    press_and_confirm(
        c,
        "queue-key-limits-lift",
        "Lift these keys' limits",
        "Lift the limits of the keys starting with vip: of queue web_ana_bulk?",
    )?;
    wait_for(10, || Ok(limits(c)? == "3 5/60.000000 - -"))
        .map_err(|e| format!("after lifting vip: {:?}: {e}", limits(c)))?;
    press_and_confirm(
        c,
        "queue-limits-lift",
        "Lift every limit",
        "Lift every limit of queue web_ana_bulk?",
    )?;
    wait_for(10, || Ok(limits(c)? == "- -/- - -"))
        .map_err(|e| format!("after lifting all: {:?}: {e}", limits(c)))?;
    wait_for(10, || Ok(shown(c)? == "none"))
        .map_err(|e| format!("the page shows {:?}: {e}", shown(c)))?;
    // The extension's own queues take no limits: no form there.
    open_queue_without_jobs(c, "pg_jobs.batch:alpha")?;
    wait_for(10, || Ok(!c.visible("queue-limit-form")?))
        .map_err(|e| format!("the limit form of pg_jobs.batch:alpha: {e}"))
}

fn queues_patched_in_place(c: &mut Ctx) -> Res<()> {
    open_queue(c, "web_ana_mail")?;
    let first_box = format!("{} {}", tid("queue-job-table"), tid("queue-job-tick"));
    c.focus_survives_refresh(&first_box, "/api/queues/jobs", "a queue job's box")?;
    let pause = format!("{} {}", queue_row("web_ana_mail"), tid("queue-pause"));
    c.focus_survives_refresh(&pause, "/api/queues", "a queue's Pause button")
}

/// The page's own Abort, sent for a job the role cannot see (as a page left open on a job that is
/// no longer its role's would): the database's refusal is shown with its code and message.
fn queue_action_error_shown(c: &mut Ctx) -> Res<()> {
    let bobs = c.sql_one(
        "SELECT min(id)::text FROM pgjobs.job_list WHERE queue = 'web_bob_mail' AND status = 'created'",
    )?;
    if bobs.is_empty() {
        return fail("no waiting job of web_bob");
    }
    open_queue(c, "web_ana_mail")?;
    c.js(&format!(
        "setTimeout(() => abortQueueJobs([{{ id: {bobs}, task: 'bob-mail' }}]), 0);"
    ))?;
    wait_for(5, || {
        c.b.alert_text()
            .map(|t| t.starts_with(&format!("Abort job {bobs}")))
    })?;
    c.b.accept_alert()?;
    wait_for(10, || {
        Ok(c.visible("error")? && c.b.text_css(&tid("error"))?.starts_with("P0002: "))
    })
    .map_err(|e| format!("the error box: {:?}: {e}", c.b.text_css(&tid("error"))))?;
    let status = job_list_status(c, &format!("id = {bobs}"))?;
    (status == "created")
        .then_some(())
        .ok_or(format!("web_bob's job is {status}"))
}

fn forged_queue_actions_change_nothing(c: &mut Ctx) -> Res<()> {
    let waiting = mail_jobs(c, "welcome", "created")?;
    let failed = mail_jobs(c, "bounce", "failed")?;
    let (Some(waiting), Some(failed)) = (waiting.first(), failed.first()) else {
        return fail("no waiting welcome job or failed bounce job of web_ana");
    };
    let due = format!("SELECT run_at::text FROM pgjobs.jobs WHERE id = {waiting}");
    let due_before = c.sql_one(&due)?;
    let (ana_cookie, ana_token) = http_login(&c.url, "web_ana")?;
    let (bob_cookie, bob_token) = http_login(&c.url, "web_bob")?;
    let page = Page::at(&c.url);
    let request = |m, p, b, ck, t, ct, o| page.request(m, p, b, ck, t, ct, o);
    let json = "application/json";
    let abort = format!(r#"{{"jobs": [{waiting}]}}"#);
    let retry = format!(r#"{{"jobs": [{failed}]}}"#);
    let pause = r#"{"queue": "web_ana_mail"}"#;
    let where_ana = r#"{"where": {"queue": "web_ana_mail"}}"#;
    let job_path = format!("/api/queues/job?id={waiting}");
    let bob = |method, path, body| {
        request(
            method,
            path,
            body,
            &bob_cookie,
            Some(&bob_token),
            json,
            None,
        )
    };
    let tries = [
        // The database refuses web_bob as for a job that does not exist.
        (
            "bob aborts ana's job",
            bob("POST", "/api/queues/jobs/abort", &abort)?,
            400,
            "P0002",
        ),
        // jobs_retry passes over another's job: nothing is brought back.
        (
            "bob retries ana's job",
            bob("POST", "/api/queues/jobs/retry", &retry)?,
            200,
            "[]",
        ),
        // jobs_reschedule passes over another's job: nothing is made due.
        (
            "bob runs ana's job now",
            bob("POST", "/api/queues/jobs/run-now", &abort)?,
            200,
            "[]",
        ),
        // jobs_delete passes over another's job: nothing is deleted.
        (
            "bob deletes ana's job",
            bob("POST", "/api/queues/jobs/delete", &abort)?,
            200,
            "[]",
        ),
        // A whole filter's jobs are found as bob: none of ana's.
        (
            "bob aborts ana's queue's jobs",
            bob("POST", "/api/queues/jobs/abort", where_ana)?,
            200,
            "[]",
        ),
        (
            "bob deletes ana's queue's jobs",
            bob("POST", "/api/queues/jobs/delete", where_ana)?,
            200,
            "[]",
        ),
        (
            "bob counts ana's queue's jobs",
            bob("GET", "/api/queues/jobs/counts?queue=web_ana_mail", "")?,
            200,
            r#""found": 0"#,
        ),
        // Reads through row-level security: none of ana's jobs.
        (
            "bob reads ana's queue",
            bob("GET", "/api/queues/jobs?queue=web_ana_mail", "")?,
            200,
            "[]",
        ),
        ("bob reads ana's job", bob("GET", &job_path, "")?, 200, "[]"),
        (
            "ana's cookie, no token",
            request(
                "POST",
                "/api/queues/jobs/abort",
                &abort,
                &ana_cookie,
                None,
                json,
                None,
            )?,
            403,
            "CSRF",
        ),
        (
            "ana's cookie, bob's token",
            request(
                "POST",
                "/api/queues/pause",
                pause,
                &ana_cookie,
                Some(&bob_token),
                json,
                None,
            )?,
            403,
            "CSRF",
        ),
        (
            "ana's cookie and token, as a form",
            request(
                "POST",
                "/api/queues/jobs/retry",
                &retry,
                &ana_cookie,
                Some(&ana_token),
                "text/plain",
                None,
            )?,
            415,
            "JSON",
        ),
        (
            "ana's cookie and token from another site's page",
            request(
                "POST",
                "/api/queues/pause",
                pause,
                &ana_cookie,
                Some(&ana_token),
                json,
                Some("http://evil.example"),
            )?,
            403,
            "another site",
        ),
    ];
    each_answered(&tries)?;
    // web_bob's pause of a queue of that name is of his own queue, not of web_ana's.
    let (status, body) = bob("POST", "/api/queues/pause", pause)?;
    let ana_paused = as_role_one(
        c,
        "web_ana",
        "SELECT coalesce(paused_at::text, 'not paused') FROM pgjobs.jobs_queues WHERE queue = 'web_ana_mail'",
    )?;
    let (resumed, _) = bob("POST", "/api/queues/resume", pause)?;
    if status != 200 || ana_paused != "not paused" || resumed != 200 {
        return fail(format!(
            "bob's pause: {status} {body}; web_ana_mail: {ana_paused}"
        ));
    }
    let statuses = (
        job_list_status(c, &format!("id = {waiting}"))?,
        job_list_status(c, &format!("id = {failed}"))?,
        c.sql_one(&due)? == due_before,
    );
    (statuses == ("created".into(), "failed".into(), true))
        .then_some(())
        .ok_or(format!(
            "web_ana's jobs after (statuses, due as before): {statuses:?}"
        ))
}

/// A job of web_bob's queue web_bob_flow (scripts/web_tests.sh: flow-root, flow-step after it,
/// flow-root-2, flow-step-2 after it), by its task.
fn flow_job(c: &mut Ctx, task: &str) -> Res<String> {
    let id = c.sql_one(&format!(
        "SELECT id::text FROM pgjobs.job_list WHERE queue = 'web_bob_flow' AND task = '{task}'"
    ))?;
    if id.is_empty() {
        return fail(format!("no job {task} in web_bob_flow"));
    }
    Ok(id)
}

/// A queue job's run_at in the table (job_list shows none while it waits) and how many
/// dependencies it still has rows for in job_dependencies.
fn run_at_and_waits(c: &mut Ctx, job: &str) -> Res<String> {
    c.sql_one(&format!(
        "SELECT run_at::text || ' ' || (SELECT count(*) FROM pgjobs.job_dependencies WHERE job_id = {job})
         FROM pgjobs.jobs WHERE id = {job}"
    ))
}

/// Whether the page writes "infinity" (or a date it could not read) anywhere.
fn page_says_infinity(c: &Ctx) -> Res<bool> {
    let text = c.js_str("return document.body.innerText;")?;
    Ok(text.contains("infinity") || text.contains("Invalid"))
}

fn queue_job_waiting_then_blocked(c: &mut Ctx) -> Res<()> {
    let (root, step) = (flow_job(c, "flow-root")?, flow_job(c, "flow-step")?);
    c.login_ok("web_bob")?;
    open_queue(c, "web_bob_flow")?;
    // The queue counts its two steps as waiting for jobs, not as scheduled for a time.
    let cell = |c: &Ctx, testid: &str| {
        c.b.text_css(&format!("{} {}", queue_row("web_bob_flow"), tid(testid)))
    };
    let theirs = "SELECT concat_ws(',', ready, scheduled, waiting, running) FROM pgjobs.jobs_queues
                  WHERE queue = 'web_bob_flow'";
    let shown_counts = |c: &Ctx| -> Res<String> {
        Ok([
            "queue-ready",
            "queue-scheduled",
            "queue-waiting",
            "queue-running",
        ]
        .iter()
        .map(|t| cell(c, t))
        .collect::<Res<Vec<_>>>()?
        .join(","))
    };
    let counts = as_role_one(c, "web_bob", theirs)?;
    if shown_counts(c)? != counts || counts != "2,0,2,0" {
        return fail(format!(
            "web_bob_flow's ready, scheduled, waiting, running: {}; the database's {counts}",
            shown_counts(c)?
        ));
    }
    // The step's line: waiting for its one job, not created and due at a time.
    let row = queue_job_row(&step);
    let in_row = |c: &Ctx, testid: &str| c.b.text_css(&format!("{row} {}", tid(testid)));
    let row_attr = |c: &Ctx, name: &str| -> Res<String> {
        Ok(c.b.attr(&c.b.find(&row)?, name)?.unwrap_or_default())
    };
    wait_for(10, || {
        Ok(row_attr(c, "data-waiting")? == "true"
            && row_attr(c, "data-blocked")? == "false"
            && in_row(c, "queue-job-state")? == "waiting"
            && in_row(c, "queue-job-due")? == "waiting for 1 job")
    })
    .map_err(|e| {
        format!(
            "the step's line: {:?}, {:?}: {e}",
            in_row(c, "queue-job-state"),
            in_row(c, "queue-job-due")
        )
    })?;
    let status = as_role_one(
        c,
        "web_bob",
        &format!("SELECT status FROM pgjobs.jobs_result({step})"),
    )?;
    // Each line has a cell under each heading, its number under Job.
    let lined_up = c.js(&format!(
        "const t = document.querySelector('{}');
         return [...t.querySelectorAll('tr.queue-job')].every((r) =>
             r.cells.length === t.tHead.rows[0].cells.length && r.cells[1].textContent === '#' + r.dataset.id);",
        tid("queue-job-table")
    ))?;
    if status != "waiting" || lined_up != json!(true) {
        return fail(format!(
            "jobs_result says the step is {status}; the lines fit the headings: {lined_up}"
        ));
    }
    // Its details list its dependency with its status; the dependency's number opens it.
    c.b.click_css(&row)?;
    let details = tid("queue-job-details");
    let dependency = format!(
        "{details} {}[data-id=\"{root}\"]",
        tid("queue-job-dependency")
    );
    let details_of = |c: &Ctx| -> Res<String> {
        Ok(c.b
            .attr(&c.b.find(&details)?, "data-id")?
            .unwrap_or_default())
    };
    wait_for(10, || {
        Ok(details_of(c)? == step
            && c.b.attr(&c.b.find(&dependency)?, "data-status")?.as_deref() == Some("created")
            && c.b
                .text_css(&dependency)?
                .starts_with(&format!("#{root} flow-root"))
            && !c
                .b
                .find_all(&format!("{details} {}", tid("queue-job-unblock")))?
                .is_empty())
    })
    .map_err(|e| {
        format!(
            "the step's dependencies {:?}: {e}",
            c.b.text_css(&format!("{details} {}", tid("queue-job-dependencies")))
        )
    })?;
    if page_says_infinity(c)? {
        return fail("the page writes infinity (or an Invalid Date) for the waiting step");
    }
    c.b.click_css(&format!("{dependency} button"))?;
    wait_for(10, || Ok(details_of(c)? == root))
        .map_err(|e| format!("the dependency's number did not open job {root}: {e}"))?;
    // The root aborted: the step is blocked, with the reason jobs_result gives, and still counted
    // as waiting for jobs.
    as_role_one(
        c,
        "web_bob",
        &format!("SELECT pgjobs.jobs_abort({root})::text"),
    )?;
    let reason = as_role_one(
        c,
        "web_bob",
        &format!("SELECT status || ': ' || error FROM pgjobs.jobs_result({step})"),
    )?;
    if reason != format!("blocked: job {root} aborted") {
        return fail(format!("jobs_result of the step: {reason:?}"));
    }
    c.b.click_css(&row)?;
    wait_for(15, || {
        Ok(row_attr(c, "data-blocked")? == "true"
            && in_row(c, "queue-job-state")? == "blocked"
            && in_row(c, "queue-job-due")? == reason
            && details_of(c)? == step
            && c.b
                .text_css(&format!("{details} {}", tid("queue-job-blocked")))?
                == format!("job {root} aborted")
            && c.b.attr(&c.b.find(&dependency)?, "data-status")?.as_deref() == Some("aborted"))
    })
    .map_err(|e| {
        format!(
            "the blocked step: {:?}, {:?}: {e}",
            in_row(c, "queue-job-state"),
            in_row(c, "queue-job-due")
        )
    })?;
    let counts = as_role_one(c, "web_bob", theirs)?;
    wait_for(10, || Ok(shown_counts(c)? == counts))
        .map_err(|e| format!("counts {:?}, the database's {counts}: {e}", shown_counts(c)))?;
    if !counts.starts_with("1,0,2,") || page_says_infinity(c)? {
        return fail(format!(
            "web_bob_flow's counts after the abort {counts}, or the page writes infinity"
        ));
    }
    c.b.screenshot(&c.out.join("queues-blocked.png"))
}

fn queue_job_unblock(c: &mut Ctx) -> Res<()> {
    let (root, step) = (flow_job(c, "flow-root")?, flow_job(c, "flow-step")?);
    if run_at_and_waits(c, &step)? != "infinity 1" {
        return fail(format!("the step before: {}", run_at_and_waits(c, &step)?));
    }
    c.login_ok("web_bob")?;
    open_queue(c, "web_bob_flow")?;
    c.b.click_css(&queue_job_row(&step))?;
    let unblock = format!("{} {}", tid("queue-job-details"), tid("queue-job-unblock"));
    wait_for(10, || Ok(!c.b.find_all(&unblock)?.is_empty()))?;
    let before = run_at_and_waits(c, &step)?;
    confirm_after_a_dismissal(
        c,
        &unblock,
        &format!("Unblock job {step} (flow-step)? It is blocked (job {root} aborted)"),
        |c| Ok(run_at_and_waits(c, &step)? == before),
    )?;
    // Due now, in the table; its waits gone; jobs_result no longer says blocked.
    wait_for(10, || Ok(run_at_and_waits(c, &step)? != before))?;
    let due = c.sql_one(&format!(
        "SELECT (run_at < 'infinity' AND run_at <= now())::text || ' ' || status::text
                || ' ' || (SELECT count(*) FROM pgjobs.job_dependencies WHERE job_id = {step})
         FROM pgjobs.jobs WHERE id = {step}"
    ))?;
    let result = as_role_one(
        c,
        "web_bob",
        &format!("SELECT status FROM pgjobs.jobs_result({step})"),
    )?;
    if due != "true created 0" || result != "created" {
        return fail(format!("after Unblock: {due}; jobs_result says {result}"));
    }
    // The page: the step is due at its time, as every time is written, and says so.
    let at = utc_text(
        c,
        &format!("SELECT run_at FROM pgjobs.jobs WHERE id = {step}"),
    )?;
    let row = queue_job_row(&step);
    wait_for(10, || {
        Ok(
            c.b.attr(&c.b.find(&row)?, "data-waiting")?.as_deref() == Some("false")
                && c.b.text_css(&format!("{row} {}", tid("queue-job-state")))? == "created"
                && c.b.text_css(&format!("{row} {}", tid("queue-job-due")))? == format!("due {at}")
                && c.b.text_css(&tid("notice"))? == format!("job {step} unblocked: due {at}")
                && c.b.find_all(&unblock)?.is_empty(),
        )
    })
    .map_err(|e| {
        format!(
            "the step's line {:?}, the notice {:?}: {e}",
            c.b.text_css(&format!("{row} {}", tid("queue-job-due"))),
            c.b.text_css(&tid("notice"))
        )
    })?;
    c.login_ok("web_ana")
}

fn forged_unblock_changes_nothing(c: &mut Ctx) -> Res<()> {
    let step = flow_job(c, "flow-step-2")?;
    let before = run_at_and_waits(c, &step)?;
    if before != "infinity 1" {
        return fail(format!("web_bob's flow-step-2 does not wait: {before}"));
    }
    let (ana_cookie, ana_token) = http_login(&c.url, "web_ana")?;
    let (bob_cookie, bob_token) = http_login(&c.url, "web_bob")?;
    let page = Page::at(&c.url);
    let request = |m, p, b, ck, t, ct, o| page.request(m, p, b, ck, t, ct, o);
    let json = "application/json";
    let path = "/api/queues/jobs/unblock";
    let unblock = format!(r#"{{"jobs": [{step}]}}"#);
    let tries = [
        // The database refuses web_ana as for a job that does not exist.
        (
            "ana unblocks bob's job",
            request(
                "POST",
                path,
                &unblock,
                &ana_cookie,
                Some(&ana_token),
                json,
                None,
            )?,
            400,
            "P0002",
        ),
        (
            "ana reads bob's job",
            request(
                "GET",
                &format!("/api/queues/job?id={step}"),
                "",
                &ana_cookie,
                None,
                json,
                None,
            )?,
            200,
            "[]",
        ),
        (
            "bob's cookie, no token",
            request("POST", path, &unblock, &bob_cookie, None, json, None)?,
            403,
            "CSRF",
        ),
        (
            "bob's cookie, ana's token",
            request(
                "POST",
                path,
                &unblock,
                &bob_cookie,
                Some(&ana_token),
                json,
                None,
            )?,
            403,
            "CSRF",
        ),
        (
            "bob's cookie and token, as a form",
            request(
                "POST",
                path,
                &unblock,
                &bob_cookie,
                Some(&bob_token),
                "text/plain",
                None,
            )?,
            415,
            "JSON",
        ),
        (
            "bob's cookie and token from another site's page",
            request(
                "POST",
                path,
                &unblock,
                &bob_cookie,
                Some(&bob_token),
                json,
                Some("http://evil.example"),
            )?,
            403,
            "another site",
        ),
    ];
    each_answered(&tries)?;
    let (after, status) = (
        run_at_and_waits(c, &step)?,
        as_role_one(
            c,
            "web_bob",
            &format!("SELECT status FROM pgjobs.jobs_result({step})"),
        )?,
    );
    (after == before && status == "waiting")
        .then_some(())
        .ok_or(format!("web_bob's flow-step-2 after: {after}, {status}"))
}

fn second_role_sees_nothing_of_the_first(c: &mut Ctx) -> Res<()> {
    c.login_ok("web_bob")?;
    c.fresh("")?;
    wait_for(10, || {
        Ok(
            c.rows("routine-row", "routine")? == ["web_bob@alpha:bob.feed"]
                || c.groups()?.len() == 1,
        )
    })?;
    let toggles: Vec<String> = c.rows("schedule-toggle", "schedule")?;
    c.b.click_css(&tid("tab-jobs"))?;
    wait_for(10, || Ok(!c.groups()?.is_empty()))?;
    let html = c.js_str("return document.documentElement.outerHTML;")?;
    let groups = c.groups()?;
    // His job and his routine's runs, nothing of web_ana's.
    if toggles != ["BOB"]
        || html.contains("web_ana")
        || !groups.iter().any(|g| g.0.ends_with(" bobjob"))
        || !groups
            .iter()
            .all(|g| g.0.ends_with(" bobjob") || g.0.ends_with(" web_bob@alpha:bob.feed"))
    {
        return fail(format!(
            "toggles {toggles:?}, groups {groups:?}, web_ana in the page: {}",
            html.contains("web_ana")
        ));
    }
    Ok(())
}

/// Each request's answer (what was tried, its status and body) is the status wanted and says
/// what it should.
fn each_answered(tries: &[(&str, (u16, String), u16, &str)]) -> Res<()> {
    for (what, (got, body), want, says) in tries {
        if got != want || !body.contains(says) {
            return fail(format!("{what}: {got} {body}, not {want} with {says}"));
        }
    }
    Ok(())
}

/// The page's server, asked as the page's script asks it.
struct Page<'a> {
    http: ureq::Agent,
    base: &'a str,
}

impl<'a> Page<'a> {
    fn at(base: &'a str) -> Self {
        Page {
            http: ureq_agent(),
            base,
        }
    }

    /// A GET, or a POST with its cookie, CSRF token, content type and origin, each as given: its
    /// status and body.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        method: &str,
        path: &str,
        body: &str,
        cookie: &str,
        token: Option<&str>,
        content_type: &str,
        origin: Option<&str>,
    ) -> Res<(u16, String)> {
        let url = format!("{}{path}", self.base);
        let mut r = if method == "GET" {
            self.http.get(url).header("Cookie", cookie).call()
        } else {
            let mut req = self
                .http
                .post(url)
                .header("Cookie", cookie)
                .content_type(content_type);
            if let Some(t) = token {
                req = req.header("X-CSRF-Token", t);
            }
            if let Some(o) = origin {
                req = req.header("Origin", o);
            }
            req.send(body)
        }
        .map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        Ok((status, r.body_mut().read_to_string().unwrap_or_default()))
    }
}

fn ureq_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// Logs in over HTTP: the cookie and the CSRF token.
fn http_login(url: &str, role: &str) -> Res<(String, String)> {
    let http = ureq_agent();
    let r = http
        .post(format!("{url}/login"))
        .content_type("application/x-www-form-urlencoded")
        .send(format!("role={role}&password=pw-{role}"))
        .map_err(|e| e.to_string())?;
    let cookie = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .ok_or("no cookie")?
        .to_string();
    let mut me = http
        .get(format!("{url}/api/me"))
        .header("Cookie", &cookie)
        .call()
        .map_err(|e| e.to_string())?;
    let v: Value = me.body_mut().read_json().map_err(|e| e.to_string())?;
    Ok((cookie, v["csrf"].as_str().ok_or("no token")?.to_string()))
}

fn forged_cancel_changes_nothing(c: &mut Ctx) -> Res<()> {
    let victim = c.sql_one("SELECT min(id)::text FROM pgjobs.batch_jobs WHERE routine = 'pickme' AND status = 'WAITING'")?;
    if victim.is_empty() {
        return fail("no waiting job of web_ana");
    }
    let (ana_cookie, ana_token) = http_login(&c.url, "web_ana")?;
    let (bob_cookie, bob_token) = http_login(&c.url, "web_bob")?;
    let http = ureq_agent();
    let body = format!(r#"{{"jobs": [{victim}]}}"#);
    let attempt = |cookie: &str, token: Option<&str>, content_type: &str| -> Res<u16> {
        let mut req = http
            .post(format!("{}/api/jobs/cancel", c.url))
            .header("Cookie", cookie)
            .content_type(content_type);
        if let Some(t) = token {
            req = req.header("X-CSRF-Token", t);
        }
        Ok(req
            .send(body.as_str())
            .map_err(|e| e.to_string())?
            .status()
            .as_u16())
    };
    let tries = [
        (
            "ana's cookie, no token",
            attempt(&ana_cookie, None, "application/json")?,
            403,
        ),
        (
            "ana's cookie, bob's token",
            attempt(&ana_cookie, Some(&bob_token), "application/json")?,
            403,
        ),
        (
            "ana's cookie and token, as a form",
            attempt(&ana_cookie, Some(&ana_token), "text/plain")?,
            415,
        ),
        (
            "no cookie",
            attempt(
                "pgjobs_session=00000000000000000000000000000000",
                Some(&ana_token),
                "application/json",
            )?,
            401,
        ),
        (
            "bob's cookie and token",
            attempt(&bob_cookie, Some(&bob_token), "application/json")?,
            400,
        ),
    ];
    for (what, got, want) in tries {
        if got != want {
            return fail(format!("{what}: {got}, not {want}"));
        }
    }
    let status = c.job_status(&format!("id = {victim}"))?;
    (status == "WAITING")
        .then_some(())
        .ok_or(format!("the job is {status}"))
}

/// Seed 001's addresses answer as the page's own do, for a script written against them.
fn seed_addresses_answer_as_the_page(c: &mut Ctx) -> Res<()> {
    let (cookie, token) = http_login(&c.url, "web_ana")?;
    let http = ureq_agent();
    let get = |path: &str| -> Res<(u16, String)> {
        let mut r = http
            .get(format!("{}{path}", c.url))
            .header("Cookie", &cookie)
            .call()
            .map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        Ok((
            status,
            r.body_mut().read_to_string().map_err(|e| e.to_string())?,
        ))
    };
    let post = |path: &str, body: &str| -> Res<(u16, String)> {
        let mut r = http
            .post(format!("{}{path}", c.url))
            .header("Cookie", &cookie)
            .header("X-CSRF-Token", &token)
            .content_type("application/json")
            .send(body)
            .map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        Ok((
            status,
            r.body_mut().read_to_string().map_err(|e| e.to_string())?,
        ))
    };
    let json = |text: &str| -> Res<Value> {
        serde_json::from_str(text).map_err(|e| format!("{e}: {text}"))
    };
    let (status, page) = get("/admin/sched")?;
    if status != 200 || !page.contains("/app.js") {
        return fail(format!("GET /admin/sched: {status}"));
    }
    let names = |v: &Value| -> Vec<String> {
        v.as_array().map_or(vec![], |a| {
            a.iter()
                .filter_map(|s| s["schedule"].as_str().map(String::from))
                .collect()
        })
    };
    let schedules = json(&get("/api/schedules")?.1)?;
    let page_schedules = json(&get("/api/routines")?.1)?["schedules"].clone();
    if names(&schedules).is_empty() || names(&schedules) != names(&page_schedules) {
        return fail(format!("GET /api/schedules: {schedules}"));
    }
    let mode = json(&get("/api/schedules/WEB/mode")?.1)?;
    let Some(asked) = mode["asked"].as_str().map(String::from) else {
        return fail(format!("GET /api/schedules/WEB/mode: {mode}"));
    };
    let (status, set) = post(
        "/api/schedules/WEB/mode",
        &format!(r#"{{"mode": "{asked}"}}"#),
    )?;
    if status != 200 || json(&set)?[0]["asked"].as_str() != Some(asked.as_str()) {
        return fail(format!("POST /api/schedules/WEB/mode: {status} {set}"));
    }
    let (status, refused) = post("/api/schedules/WEB/mode", r#"{"mode": "sideways"}"#)?;
    if status == 200 || json(&refused)?["sqlstate"].as_str() != Some("22023") {
        return fail(format!(
            "POST /api/schedules/WEB/mode sideways: {status} {refused}"
        ));
    }
    let (status, unknown) = get("/api/schedules/NO%20SUCH/mode")?;
    if status == 200 {
        return fail(format!("GET /api/schedules/NO%20SUCH/mode: {unknown}"));
    }
    let keys = |v: &Value| -> Vec<String> {
        v.as_array().map_or(vec![], |a| {
            a.iter().map(|g| g["group_key"].to_string()).collect()
        })
    };
    let groups = json(&get("/api/web/sched/jobs/groups?by=status")?.1)?;
    let page_groups = json(&get("/api/jobs/groups?by=status")?.1)?;
    if keys(&groups).is_empty() || keys(&groups) != keys(&page_groups) {
        return fail(format!("GET /api/web/sched/jobs/groups: {groups}"));
    }
    let first = groups[0]["group_key"].as_str().unwrap_or("").to_string();
    let (status, jobs) = get(&format!("/api/web/sched/jobs?by=status&group={first}"))?;
    if status != 200 || json(&jobs)?.as_array().is_none_or(Vec::is_empty) {
        return fail(format!(
            "GET /api/web/sched/jobs?group={first}: {status} {jobs}"
        ));
    }
    let (status, cancelled) = post("/api/web/sched/jobs/cancel", r#"{"jobs": []}"#)?;
    (status == 200 && json(&cancelled)? == Value::Array(vec![]))
        .then_some(())
        .ok_or(format!(
            "POST /api/web/sched/jobs/cancel: {status} {cancelled}"
        ))
}

fn logout_ends_the_session(c: &mut Ctx) -> Res<()> {
    c.login_ok("web_ana")?;
    c.b.click_css(&tid("logout"))?;
    wait_for(10, || c.visible("login"))?;
    c.b.goto(&format!("{}/", c.url))?;
    wait_for(10, || c.visible("login"))
}

fn main() {
    let mut opts = std::collections::HashMap::new();
    let mut it = std::env::args().skip(1);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        opts.insert(k.trim_start_matches("--").to_string(), v);
    }
    let [url, dead_url, admin_dsn, port, out] =
        ["url", "dead-url", "admin-dsn", "driver-port", "out"]
            .map(|k| opts.get(k).cloned().unwrap_or_default());
    let Ok(port) = port.parse::<u16>() else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let admin = match postgres::Client::connect(&admin_dsn, postgres::NoTls) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pg_jobs_web_e2e: {admin_dsn}: {e}");
            std::process::exit(1);
        }
    };
    let b = match Browser::start(port) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("pg_jobs_web_e2e: {e}");
            std::process::exit(1);
        }
    };
    let out = PathBuf::from(out);
    let _ = std::fs::create_dir_all(&out);
    let mut c = Ctx {
        b,
        url,
        dead_url,
        admin,
        admin_dsn,
        out,
    };
    type Test = fn(&mut Ctx) -> Res<()>;
    let tests: &[(&str, Test)] = &[
        ("a wrong password gets the wrong-role-or-password page", login_wrong_password),
        ("a database not reachable gets its page", login_database_unreachable),
        ("the session cookie is HttpOnly, SameSite=Strict, 128 bits", login_cookie_is_http_only),
        ("Realtime first; each tab counts its routines, failing ones and active jobs", tabs_counts),
        ("counts come with their words: 5 routines 1 failing, 2 routines · 1 scheduled · 1 completed", counts_read_with_their_words),
        ("one time format, in UTC or the viewer's zone (remembered)", times_one_format_in_either_zone),
        ("keys 1, 2, 3 switch tabs and the address follows", tabs_keys_and_address),
        ("?tab=1|2|3|realtime|batch|jobs opens that tab", address_opens_tab),
        ("filters are shut until asked for, open or shut remembered", filters_shut_and_remembered),
        ("the Filters button counts what is set (Filters · 2)", filters_count),
        ("key / opens the filters and focuses the text", key_slash_opens_text_filter),
        ("Problems only (key P) shows the failing routines only", problems_only),
        ("routines grouped by group, schedule, computer, status, run order", groupings),
        ("realtime groups start shut; one opened by hand stays open after a reload", realtime_groups_start_shut_and_stay_open),
        ("a group's header: RUNNING with a green dot, else its most pressing status and counts", group_header_status),
        ("a filter opens the groups it found something in", filter_opens_groups),
        ("a scheduled routine says on its line when it runs next", scheduled_routine_says_when),
        ("the 5 s refresh keeps the rows: a selection and the focus stay", routines_patched_in_place),
        ("a routine's details: full name, masked secret, waits for, last message", details_mask_secrets),
        ("the scheduler in its own schedule has no Restart or Stop", scheduler_has_no_commands),
        ("Restart asks first, restarts the routine, the log names the person", restart_asks_and_names_the_person),
        ("Stop asks first, ends the run, the log names the person", stop_asks_and_names_the_person),
        ("Commands off / on asks first, says who on hover, the scheduler stops commanding", toggle_commands),
        ("WAS RUNNING banner while the scheduler is stopped: its time as the page's, a warning's colour", was_running_banner),
        ("Jobs: groups only until opened, 200 at a time, Show more", jobs_show_more),
        ("Jobs: a failed job's line shows its error; details say who may take it and who took it", jobs_failed_line_and_details),
        ("Jobs: a job's details mask a secret argument", jobs_details_mask_secrets),
        ("Jobs: Cancel N on a group's header", jobs_cancel_group),
        ("Jobs: Cancel all (N) cancels the filtered list only", jobs_cancel_all_filtered),
        ("Jobs: Cancel selected cancels the ticked jobs only", jobs_cancel_selected),
        ("Jobs: an open group is read again every 5 s", jobs_open_group_read_again),
        ("Jobs: the 5 s refresh keeps the rows: the focus on a job's box stays", jobs_patched_in_place),
        ("Jobs: a kill job is labelled among its routine's runs", jobs_kill_job_labelled),
        ("Jobs: by status, computer, one list, and a month", jobs_groupings_and_months),
        ("text size − and + from 80 to 200 %, remembered", text_size_remembered),
        ("Schedules (key 4, ?tab=schedules): the role's cron schedules with next slot, last job, missed-slot rule; web_bob sees his only", schedules_tab_lists_the_roles_own),
        ("Schedules: Disable asks first and disables the schedule; Enable enables it again", schedules_disable_then_enable),
        ("Schedules: Run now asks first and adds the schedule's job at once, as its owner", schedules_run_now),
        ("Schedules: a schedule opens to its run history (a SQL job's runs from job_runs, a queue job's time run from its claim to its completion)", schedules_run_history),
        ("Schedules: a running SQL job with its SQL and elapsed time; Abort asks first and aborts it", sql_job_running_and_abort),
        ("Schedules: web_bob's forged Disable or Abort of web_ana's (or a forged POST) changes nothing", forged_schedule_actions_change_nothing),
        ("a POST refused (another site's, a token's on a server without tokens) is answered once its body is in; its connection serves the next request", refusal_reads_the_body_first),
        ("Queues (key 5, ?tab=queues): the role's queues with counts, oldest ready, pause and limits as the database has them; web_bob sees his only", queues_tab_lists_the_roles_own),
        ("Queues: Pause asks first and pauses the queue (jobs_queues.paused_at); Resume lifts it", queues_pause_then_resume),
        ("Queues: a queue opens to its jobs, filtered by status and by text", queue_jobs_filter_by_status_and_text),
        ("Queues: a queue's jobs 200 at a time, Show 200 more", queue_jobs_show_more),
        ("Queues: a job's details: payload, attempts, each error with its time, its worker, result, progress, concurrency key", queue_job_details),
        ("Queues: Abort asks first and aborts a waiting job; Retry asks first and brings a failed job back", queue_job_abort_and_retry),
        ("Queues: Abort ticked asks with the count (2) and aborts the ticked jobs only; Retry ticked brings them back", queue_jobs_bulk_abort_and_retry),
        ("Queues: Run now asks first and makes a job waiting for its time due now (when it was first due kept); Run ticked now counts and moves only the ticked jobs waiting for their time", queue_jobs_run_now),
        ("Queues: Delete asks first and removes a waiting job, its history and its key; Delete ticked removes the ticked ones", queue_jobs_delete),
        ("Queues: Run all now, Delete all and Abort all act on every job the filter finds (text: odd), each asking first with the count", queue_jobs_act_on_filter),
        ("Queues: a queue's limits set from the page (running at once, claims per window, a prefix's keys in order), a bad one refused with the database's 22023, web_bob's limiting his own queue of that name, then lifted", queue_limits_set_and_lifted),
        ("Queues: a queue's charts sum its completions and failed attempts over the last hour (60 bars) and day (144); web_bob reads none of them", queue_charts_count_completions_and_failures),
        ("Queues: counts that take too long to make are read as the launcher wrote them at the last minute's end, and say so", queues_counted_by_minute_when_counting_takes_long),
        ("Queues: the 5 s refresh keeps the rows: the focus on a job's box and on Pause stays", queues_patched_in_place),
        ("Queues: an error from the database is shown with its code and message (an Abort of a job not the role's: P0002)", queue_action_error_shown),
        ("Queues: web_bob's forged Abort, Retry, Run now, Delete, Pause or reads of web_ana's (or a forged POST) change nothing", forged_queue_actions_change_nothing),
        ("Queues: a job added with a dependency is counted waiting and reads waiting for 1 job (no time), its details list the dependency (which opens); the dependency aborted, it reads blocked with jobs_result's reason", queue_job_waiting_then_blocked),
        ("Queues: Unblock asks first and makes a blocked job due now (run_at no longer infinity, its waits gone)", queue_job_unblock),
        ("Queues: web_ana's forged Unblock of web_bob's waiting job (or a forged POST) changes nothing", forged_unblock_changes_nothing),
        ("a second role sees none of the first role's routines or jobs", second_role_sees_nothing_of_the_first),
        ("a forged cancel (no token, another session's) changes nothing", forged_cancel_changes_nothing),
        ("seed 001's addresses answer as the page's own", seed_addresses_answer_as_the_page),
        ("logging out ends the session", logout_ends_the_session),
    ];
    for (name, test) in tests {
        let started = Instant::now();
        let result = test(&mut c);
        // A question left open would stop the next test.
        let _ = c.b.dismiss_alert();
        match result {
            Ok(()) => println!("web: {name} ... ok"),
            Err(why) => {
                let shot = c.out.join(format!(
                    "failed-{}.png",
                    name.chars()
                        .filter(|ch| ch.is_alphanumeric())
                        .take(40)
                        .collect::<String>()
                ));
                let _ = c.b.screenshot(&shot);
                println!("web: {name} ... FAILED: {why}");
            }
        }
        eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
    }
}
