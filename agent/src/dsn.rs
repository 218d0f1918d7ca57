//! The connection settings: the --dsn string (libpq's `key=value` form or a postgres:// URL),
//! with PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSWORD for what it leaves out, as libpq does.

use postgres::config::Host;
use postgres::Config;
use std::time::Duration;

/// Builds the client configuration. `env` looks up an environment variable; `os_user` is the
/// name of the user the agent runs as (libpq's default user).
pub fn assemble(
    dsn: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
    os_user: &str,
    application_name: &str,
) -> Result<Config, String> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let mut dsn = dsn.unwrap_or("").trim().to_string();
    // The URL parser takes a host without a port to mean 5432; libpq takes PGPORT then.
    if let Some(port) = env("PGPORT") {
        if let Some(with_port) = url_with_port(&dsn, &port) {
            dsn = with_port;
        }
    }
    let mut config: Config = if dsn.is_empty() {
        Config::new()
    } else {
        dsn.parse().map_err(|e| format!("--dsn: {e}"))?
    };
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        // libpq's default is the Unix socket folder compiled in (Debian: /var/run/postgresql).
        let hosts = env("PGHOST").unwrap_or_else(|| "/var/run/postgresql".to_string());
        for host in hosts.split(',') {
            config.host(host.trim());
        }
    }
    if config.get_ports().is_empty() {
        if let Some(port) = env("PGPORT") {
            for p in port.split(',') {
                let p = p
                    .trim()
                    .parse::<u16>()
                    .map_err(|_| format!("PGPORT: not a port: {port:?}"))?;
                config.port(p);
            }
        }
    }
    let user = match config.get_user() {
        Some(user) => user.to_string(),
        None => {
            let user = env("PGUSER").unwrap_or_else(|| os_user.to_string());
            config.user(&user);
            user
        }
    };
    if config.get_dbname().is_none() {
        config.dbname(&env("PGDATABASE").unwrap_or(user));
    }
    if config.get_password().is_none() {
        if let Some(password) = env("PGPASSWORD") {
            config.password(password);
        }
    }
    if config.get_application_name().is_none() {
        config.application_name(application_name);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    // A server that vanishes without closing the connection (a network cut) is noticed within
    // about a minute, not the kernel's default of over two hours: the main thread would wait
    // that long inside a call, and cancels' SIGKILLs with it.
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30));
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(Duration::from_secs(10));
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(3);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(60));
    }
    Ok(config)
}

/// A postgres:// URL whose hosts name no port, with `port` added to each; None otherwise.
pub fn url_with_port(dsn: &str, port: &str) -> Option<String> {
    let prefix = ["postgres://", "postgresql://"]
        .into_iter()
        .find(|p| dsn.starts_with(p))?;
    let rest = &dsn[prefix.len()..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (credentials, hosts) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    if hosts.is_empty() || tail.contains("port=") {
        return None;
    }
    let mut out = Vec::new();
    for host in hosts.split(',') {
        // [::1] or [::1]:5432; name or name:5432.
        let has_port = match host.rfind(']') {
            Some(close) => host[close..].contains(':'),
            None => host.contains(':'),
        };
        if has_port {
            return None;
        }
        out.push(format!("{host}:{port}"));
    }
    Some(format!("{prefix}{credentials}{}{tail}", out.join(",")))
}

/// Where the configuration points, for the log (never the password).
pub fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "host={} port={} user={} dbname={}",
        hosts.join(","),
        if ports.is_empty() {
            "5432".to_string()
        } else {
            ports.join(",")
        },
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn build(dsn: Option<&str>, vars: &[(&str, &str)]) -> Result<Config, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assemble(
            dsn,
            |name| vars.get(name).cloned(),
            "osuser",
            "pg_jobs_agent test",
        )
    }

    fn hosts(config: &Config) -> Vec<String> {
        config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => format!("tcp:{name}"),
                Host::Unix(path) => format!("unix:{}", path.display()),
            })
            .collect()
    }

    #[test]
    fn the_dsn_wins_over_the_environment() {
        let c = build(
            Some("host=db1 port=6000 user=agent_a dbname=jobs password=secret"),
            &[
                ("PGHOST", "other"),
                ("PGPORT", "7000"),
                ("PGUSER", "u"),
                ("PGDATABASE", "d"),
                ("PGPASSWORD", "p"),
            ],
        )
        .unwrap();
        assert_eq!(hosts(&c), vec!["tcp:db1"]);
        assert_eq!(c.get_ports(), &[6000]);
        assert_eq!(c.get_user(), Some("agent_a"));
        assert_eq!(c.get_dbname(), Some("jobs"));
        assert_eq!(c.get_password(), Some(&b"secret"[..]));
        assert_eq!(c.get_application_name(), Some("pg_jobs_agent test"));
        assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(10)));
        assert_eq!(c.get_keepalives_retries(), Some(3));
        // What the DSN says stays.
        let c = build(
            Some("host=x keepalives_interval=5 keepalives_retries=7"),
            &[],
        )
        .unwrap();
        assert_eq!(
            (c.get_keepalives_interval(), c.get_keepalives_retries()),
            (Some(Duration::from_secs(5)), Some(7))
        );
    }

    #[test]
    fn the_environment_fills_what_the_dsn_leaves_out() {
        let c = build(
            Some("dbname=jobs"),
            &[
                ("PGHOST", "localhost"),
                ("PGPORT", "29100"),
                ("PGUSER", "agent_b"),
                ("PGPASSWORD", "pw"),
            ],
        )
        .unwrap();
        assert_eq!(hosts(&c), vec!["tcp:localhost"]);
        assert_eq!(c.get_ports(), &[29100]);
        assert_eq!(c.get_user(), Some("agent_b"));
        assert_eq!(c.get_dbname(), Some("jobs"));
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        assert_eq!(
            describe(&c),
            "host=localhost port=29100 user=agent_b dbname=jobs"
        );
    }

    #[test]
    fn defaults_as_libpq() {
        // No DSN, no variables: the Unix socket, the OS user, a database named after the user.
        let c = build(None, &[]).unwrap();
        assert_eq!(hosts(&c), vec!["unix:/var/run/postgresql"]);
        assert!(c.get_ports().is_empty());
        assert_eq!(c.get_user(), Some("osuser"));
        assert_eq!(c.get_dbname(), Some("osuser"));
        assert_eq!(c.get_password(), None);
        // PGUSER names the database too when PGDATABASE is not set; an empty variable is unset.
        let c = build(
            Some(""),
            &[
                ("PGUSER", "agent_a"),
                ("PGHOST", "/tmp"),
                ("PGDATABASE", ""),
            ],
        )
        .unwrap();
        assert_eq!(c.get_dbname(), Some("agent_a"));
        assert_eq!(hosts(&c), vec!["unix:/tmp"]);
    }

    #[test]
    fn urls_and_errors() {
        let c = build(
            Some("postgres://agent_a:pw@db.example:5433/jobs"),
            &[("PGUSER", "x")],
        )
        .unwrap();
        assert_eq!(hosts(&c), vec!["tcp:db.example"]);
        assert_eq!(c.get_ports(), &[5433]);
        assert_eq!(c.get_user(), Some("agent_a"));
        assert_eq!(c.get_dbname(), Some("jobs"));
        let c = build(
            Some("postgresql://localhost/jobs"),
            &[("PGPORT", "29101"), ("PGUSER", "agent_b")],
        )
        .unwrap();
        assert_eq!(c.get_ports(), &[29101]);
        assert_eq!(c.get_user(), Some("agent_b"));
        let c = build(
            Some("postgresql://u@localhost:5999/jobs"),
            &[("PGPORT", "29101")],
        )
        .unwrap();
        assert_eq!(c.get_ports(), &[5999]);
        assert_eq!(
            url_with_port("postgres://a:b@h1,h2/db?x=1", "7"),
            Some("postgres://a:b@h1:7,h2:7/db?x=1".into())
        );
        assert_eq!(
            url_with_port("postgres://[::1]/db", "7"),
            Some("postgres://[::1]:7/db".into())
        );
        assert_eq!(url_with_port("postgres://[::1]:5/db", "7"), None);
        assert_eq!(url_with_port("postgres:///db", "7"), None);
        assert_eq!(url_with_port("host=x", "7"), None);
        assert!(build(Some("host=x port=notaport"), &[])
            .unwrap_err()
            .starts_with("--dsn:"));
        assert!(build(Some("nonsense"), &[]).is_err());
        assert!(build(None, &[("PGPORT", "70000")])
            .unwrap_err()
            .contains("PGPORT"));
    }
}
