//! A small client of the W3C WebDriver protocol, for chromedriver (Debian's chromium-driver)
//! driving Debian's chromium headless.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
pub const VIEWER_TIME_ZONE: &str = "Asia/Tokyo";

pub struct Browser {
    http: ureq::Agent,
    session: String,
    driver: Child,
    _profile: Profile,
}

/// The browser's fresh profile folder, removed at the end.
struct Profile(std::path::PathBuf);
impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub type Res<T> = Result<T, String>;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

impl Browser {
    /// Starts chromedriver on the port and a headless chromium session.
    pub fn start(port: u16) -> Res<Browser> {
        // The browser lives nine hours from UTC (no summer time), so that a time shown in the
        // viewer's zone differs from the same time in UTC.
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .env("TZ", VIEWER_TIME_ZONE)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("chromedriver: {e}"))?;
        let profile =
            Profile(std::env::temp_dir().join(format!("pg_jobs_web_e2e-{}", std::process::id())));
        let http = agent();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut r) = http.get(format!("{base}/status")).call() {
                if r.body_mut()
                    .read_json::<Value>()
                    .ok()
                    .and_then(|v| v["value"]["ready"].as_bool())
                    == Some(true)
                {
                    break;
                }
            }
            if Instant::now() > deadline {
                return Err("chromedriver did not start".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1400,1000",
        ];
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.0.display()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}
        }}});
        let mut r = http
            .post(format!("{base}/session"))
            .send_json(&caps)
            .map_err(|e| e.to_string())?;
        let v: Value = r.body_mut().read_json().map_err(|e| e.to_string())?;
        let id = v["value"]["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session: {v}"))?;
        Ok(Browser {
            http,
            session: format!("{base}/session/{id}"),
            driver,
            _profile: profile,
        })
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Res<Value> {
        let url = format!("{}{}", self.session, path);
        let result = match (method, body) {
            ("GET", _) => self.http.get(&url).call(),
            ("DELETE", _) => self.http.delete(&url).call(),
            (_, b) => self
                .http
                .post(&url)
                .send_json(b.unwrap_or_else(|| json!({}))),
        };
        let mut r = result.map_err(|e| format!("{method} {path}: {e}"))?;
        let v: Value = r
            .body_mut()
            .read_json()
            .map_err(|e| format!("{method} {path}: {e}"))?;
        if let Some(err) = v["value"]["error"].as_str() {
            return Err(format!(
                "{method} {path}: {err}: {}",
                v["value"]["message"].as_str().unwrap_or("")
            ));
        }
        Ok(v["value"].clone())
    }

    pub fn goto(&self, url: &str) -> Res<()> {
        self.cmd("POST", "/url", Some(json!({ "url": url })))
            .map(|_| ())
    }
    pub fn url(&self) -> Res<String> {
        Ok(self
            .cmd("GET", "/url", None)?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }
    pub fn refresh(&self) -> Res<()> {
        self.cmd("POST", "/refresh", None).map(|_| ())
    }
    pub fn find_all(&self, css: &str) -> Res<Vec<String>> {
        let v = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        )?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }
    pub fn find(&self, css: &str) -> Res<String> {
        self.find_all(css)?
            .into_iter()
            .next()
            .ok_or_else(|| format!("no element {css}"))
    }
    pub fn click(&self, element: &str) -> Res<()> {
        self.cmd("POST", &format!("/element/{element}/click"), None)
            .map(|_| ())
    }
    /// Found again when the page re-rendered it in between (it reads every 5 s).
    fn fresh_element<T>(&self, css: &str, f: impl Fn(&str) -> Res<T>) -> Res<T> {
        let mut tries = 0;
        loop {
            match f(&self.find(css)?) {
                Err(e) if e.contains("stale element") && tries < 5 => tries += 1,
                other => return other,
            }
        }
    }
    pub fn click_css(&self, css: &str) -> Res<()> {
        self.fresh_element(css, |e| self.click(e))
    }
    pub fn type_into(&self, element: &str, text: &str) -> Res<()> {
        self.cmd(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        )
        .map(|_| ())
    }
    pub fn clear(&self, element: &str) -> Res<()> {
        self.cmd("POST", &format!("/element/{element}/clear"), None)
            .map(|_| ())
    }
    pub fn text(&self, element: &str) -> Res<String> {
        Ok(self
            .cmd("GET", &format!("/element/{element}/text"), None)?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }
    pub fn text_css(&self, css: &str) -> Res<String> {
        self.fresh_element(css, |e| self.text(e))
    }
    pub fn attr(&self, element: &str, name: &str) -> Res<Option<String>> {
        Ok(self
            .cmd("GET", &format!("/element/{element}/attribute/{name}"), None)?
            .as_str()
            .map(String::from))
    }
    /// A key pressed and released, sent to whatever has the focus.
    pub fn press(&self, key: &str) -> Res<()> {
        let actions = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]});
        self.cmd("POST", "/actions", Some(actions)).map(|_| ())
    }
    pub fn exec(&self, script: &str, args: Value) -> Res<Value> {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }
    pub fn alert_text(&self) -> Res<String> {
        Ok(self
            .cmd("GET", "/alert/text", None)?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }
    pub fn accept_alert(&self) -> Res<()> {
        self.cmd("POST", "/alert/accept", None).map(|_| ())
    }
    pub fn dismiss_alert(&self) -> Res<()> {
        self.cmd("POST", "/alert/dismiss", None).map(|_| ())
    }
    pub fn delete_cookies(&self) -> Res<()> {
        self.cmd("DELETE", "/cookie", None).map(|_| ())
    }
    pub fn screenshot(&self, path: &std::path::Path) -> Res<()> {
        let v = self.cmd("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        std::fs::write(path, png).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.http.delete(&self.session).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
