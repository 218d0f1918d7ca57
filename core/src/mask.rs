//! Secrets as shown: the one rule by which arguments, environment, output tails, error messages
//! and commands are masked wherever anyone but their owner's agent reads them.
//!
//! Masked are
//! - the value of a flag whose name looks like a secret (see [`is_secret_name`]), or `-p`: the
//!   next word (`--password x`, even `--password -x`), or what follows `=` or `:` (`--api-key=x`,
//!   `--password:x`);
//! - the value of `NAME=value` where NAME looks like a secret (`PASSWORD=x`, `PGPASSWORD=x`,
//!   `password=pw` in a libpq keyword string, `api_key='a b'`), and of an environment variable
//!   with such a name;
//! - the password of a URL (`postgresql://user:********@host/db`), anywhere in a word.
//!
//! A word is a run of non-blank characters, a quoted part (`'a b'`, `"a b"`) included. A mask
//! errs on the side of hiding: `mkdir -p dir` shows `mkdir -p ********`.

/// What is shown in place of a secret.
pub const MASK: &str = "********";

/// Words of a name (split at anything not a letter or digit, a plural `s` dropped) that make its
/// value a secret. The longer ones also end a word (`dbpassword`, `myapikey`).
const LONG_WORDS: [&str; 7] = [
    "password",
    "passwd",
    "passphrase",
    "token",
    "secret",
    "credential",
    "apikey",
];
/// These only stand alone (`key`, not `monkey` or `keyboard`; `auth`, not `author`).
const SHORT_WORDS: [&str; 3] = ["pass", "key", "auth"];

/// Whether a name (of a flag without its dashes, of a variable, of a keyword) looks like a secret.
pub fn is_secret_name(name: &str) -> bool {
    name.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| {
            let one = word.strip_suffix('s').unwrap_or(word);
            [word, one]
                .iter()
                .any(|w| SHORT_WORDS.contains(w) || LONG_WORDS.iter().any(|long| w.ends_with(long)))
        })
}

fn is_secret_flag(flag: &str) -> bool {
    let name = flag.trim_start_matches('-');
    flag.starts_with('-') && !name.is_empty() && (flag == "-p" || is_secret_name(name))
}

/// Masks the password of every URL in a word (`scheme://user:password@host`).
fn mask_urls(word: &str) -> String {
    let mut shown = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        shown.push_str(before);
        let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        match authority.rfind('@') {
            Some(userinfo_end) => match authority[..userinfo_end].find(':') {
                Some(colon) => {
                    shown.push_str(&authority[..=colon]);
                    shown.push_str(MASK);
                    shown.push_str(&authority[userinfo_end..]);
                }
                None => shown.push_str(authority),
            },
            None => shown.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    shown.push_str(rest);
    shown
}

/// The rule on one word. `pending`: the word before was a secret flag waiting for its value.
fn mask_word(word: &str, pending: &mut bool) -> String {
    if std::mem::take(pending) {
        return MASK.to_string();
    }
    if word.starts_with('-') {
        match word.find(['=', ':']) {
            Some(sep) if is_secret_flag(&word[..sep]) => {
                return format!("{}{MASK}", &word[..=sep]);
            }
            None if is_secret_flag(word) => {
                *pending = true;
                return word.to_string();
            }
            _ => {}
        }
    } else if let Some((name, _)) = word.split_once('=') {
        let variable = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if variable && is_secret_name(name) {
            return format!("{name}={MASK}");
        }
    }
    if word.contains(char::is_whitespace) {
        // A quoted part that is no secret's value as a whole: its own words are masked, so that
        // a stray quote in prose hides nothing from the rule.
        return mask_pieces(word, pending, false);
    }
    mask_urls(word)
}

/// Splits text into its blanks and words, in order. With `quotes`, a quote that begins a word or
/// a value (after `=` or `:`) and is closed later keeps its blanks in the word (`'a b'`,
/// `password="a b"`); an apostrophe in a word (`can't`) is a letter.
fn pieces(text: &str, quotes: bool) -> Vec<(bool, &str)> {
    let last = |q: char| text.rfind(q);
    let (last_single, last_double) = (last('\''), last('"'));
    let mut found = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    let mut in_word = false;
    let mut before: Option<char> = None;
    for (i, c) in text.char_indices() {
        let blank = quote.is_none() && c.is_whitespace();
        if i > start && blank == in_word {
            found.push((in_word, &text[start..i]));
            start = i;
        }
        quote = match quote {
            Some(q) if c == q => None,
            Some(q) => Some(q),
            None => {
                let closed = match c {
                    '\'' => last_single > Some(i),
                    '"' => last_double > Some(i),
                    _ => false,
                };
                let opens = !in_word || matches!(before, Some('=' | ':'));
                (quotes && closed && opens).then_some(c)
            }
        };
        in_word = !blank;
        before = Some(c);
    }
    if start < text.len() {
        found.push((in_word, &text[start..]));
    }
    found
}

fn mask_pieces(text: &str, pending: &mut bool, quotes: bool) -> String {
    pieces(text, quotes)
        .into_iter()
        .map(|(word, piece)| {
            if word {
                mask_word(piece, pending)
            } else {
                piece.to_string()
            }
        })
        .collect()
}

/// Free text as shown (an output tail, an error, a message, a shell command), blanks kept.
pub fn mask_text(text: &str) -> String {
    mask_pieces(text, &mut false, true)
}

/// Arguments as shown: each is a word, or several (`host=h password=pw`); a secret flag's value
/// is the next argument, whatever it is. A null stays null and ends a flag's wait for its value.
pub fn mask_args(args: &[Option<String>]) -> Vec<Option<String>> {
    let mut pending = false;
    args.iter()
        .map(|arg| match arg {
            None => {
                pending = false;
                None
            }
            Some(_) if std::mem::take(&mut pending) => Some(MASK.to_string()),
            Some(text) => Some(mask_pieces(text, &mut pending, true)),
        })
        .collect()
}

/// An environment variable's value as shown.
pub fn mask_env(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        MASK.to_string()
    } else {
        mask_text(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        let given: Vec<Option<String>> = words.iter().map(|a| Some(a.to_string())).collect();
        mask_args(&given).into_iter().map(Option::unwrap).collect()
    }

    /// Arguments, each case as given and as shown.
    const ARGUMENTS: &[(&[&str], &[&str])] = &[
        (&["--password", "hunter2"], &["--password", MASK]),
        (&["--password=hunter2"], &["--password=********"]),
        (&["--password:hunter2"], &["--password:********"]),
        (&["--password", "-starts-with-dash"], &["--password", MASK]),
        (&["--password=-starts-with-dash"], &["--password=********"]),
        (&["--passphrase", "x"], &["--passphrase", MASK]),
        (&["--apikey", "x"], &["--apikey", MASK]),
        (&["--api-key=abc"], &["--api-key=********"]),
        (&["--api_key", "abc"], &["--api_key", MASK]),
        (&["-p", "x"], &["-p", MASK]),
        (&["-p=x"], &["-p=********"]),
        (&["-token", "t"], &["-token", MASK]),
        (&["--db-passwd", "x"], &["--db-passwd", MASK]),
        (&["--dbpassword", "x"], &["--dbpassword", MASK]),
        (&["--SECRET", "y"], &["--SECRET", MASK]),
        (&["--auth_token=z"], &["--auth_token=********"]),
        (&["--credentials", "c"], &["--credentials", MASK]),
        (&["--key", "k"], &["--key", MASK]),
        (&["--pass", "k"], &["--pass", MASK]),
        (&["--token", "--verbose", "x"], &["--token", MASK, "x"]),
        (&["--password"], &["--password"]),
        (&["PASSWORD=x", "run"], &["PASSWORD=********", "run"]),
        (&["PGPASSWORD=x"], &["PGPASSWORD=********"]),
        (&["DB_PASS=x"], &["DB_PASS=********"]),
        (&["GITHUB_TOKEN=x"], &["GITHUB_TOKEN=********"]),
        (
            &["postgresql://u:pw@h/db"],
            &["postgresql://u:********@h/db"],
        ),
        (
            &[
                "--dsn",
                "postgres://ann:s3cr:et@db.example:5432/app?sslmode=require",
            ],
            &[
                "--dsn",
                "postgres://ann:********@db.example:5432/app?sslmode=require",
            ],
        ),
        (
            &["--dsn=postgresql://u:pw@h/db"],
            &["--dsn=postgresql://u:********@h/db"],
        ),
        (
            &["host=h password=pw dbname=x"],
            &["host=h password=******** dbname=x"],
        ),
        (
            &["host=h password='p w' dbname=x"],
            &["host=h password=******** dbname=x"],
        ),
        (&["password=pw", "user=u"], &["password=********", "user=u"]),
        (&["--user", "ann", "--fast"], &["--user", "ann", "--fast"]),
    ];

    /// Arguments that look like nothing secret, shown as given.
    const PLAIN: &[&str] = &[
        "run",
        "--fast",
        "--keyboard",
        "us",
        "--monkey",
        "x",
        "a=b",
        "--author",
        "y",
        "--passenger",
        "z",
        "--port",
        "5432",
        "https://example.com/a:b@c",
        "https://user@host/db",
        "key-value.txt",
        "--output=-",
        "-",
        "--",
        "user=ann",
        "1=2",
    ];

    #[test]
    fn every_case_of_arguments_is_shown_as_the_table_says() {
        for (given, shown) in ARGUMENTS {
            assert_eq!(args(given), *shown, "{given:?}");
        }
    }

    #[test]
    fn arguments_that_are_no_secret_are_shown_as_given() {
        assert_eq!(args(PLAIN), PLAIN);
        for word in PLAIN {
            assert_eq!(mask_text(word), *word);
        }
    }

    #[test]
    fn text_is_masked_by_the_same_rule_with_its_blanks_kept() {
        for (given, shown) in [
            (
                "psql: error: --password hunter2 refused\n",
                "psql: error: --password ******** refused\n",
            ),
            (
                "connecting to postgresql://u:pw@h/db failed",
                "connecting to postgresql://u:********@h/db failed",
            ),
            (
                "env PASSWORD=x  ./run --api-key=abc",
                "env PASSWORD=********  ./run --api-key=********",
            ),
            (
                "host=h password='a b c' port=1",
                "host=h password=******** port=1",
            ),
            ("--password 'a b' next", "--password ******** next"),
            ("-p x\ttail", "-p ********\ttail"),
            ("all is well", "all is well"),
            (
                "can't log in: --password hunter2 it's wrong",
                "can't log in: --password ******** it's wrong",
            ),
            (
                "'tis said: --password hunter2 and that's it",
                "'tis said: --password ******** and that's it",
            ),
            (
                "echo 'connect to postgresql://u:pw@h/db now'",
                "echo 'connect to postgresql://u:********@h/db now'",
            ),
            ("", ""),
            ("   ", "   "),
        ] {
            assert_eq!(mask_text(given), shown, "{given:?}");
        }
    }

    #[test]
    fn for_every_argument_masked_its_text_form_is_masked() {
        for (given, shown) in ARGUMENTS {
            assert_eq!(mask_text(&given.join(" ")), shown.join(" "), "{given:?}");
        }
    }

    #[test]
    fn environment_values_are_masked_by_name_and_by_content() {
        assert_eq!(mask_env("PASSWORD", "x"), MASK);
        assert_eq!(mask_env("AWS_SECRET_ACCESS_KEY", "x"), MASK);
        assert_eq!(mask_env("api_key", "x"), MASK);
        assert_eq!(
            mask_env("DATABASE_URL", "postgres://u:pw@h/db"),
            "postgres://u:********@h/db"
        );
        assert_eq!(
            mask_env("PGOPTIONS", "host=h password=pw"),
            "host=h password=********"
        );
        assert_eq!(mask_env("LANG", "C.UTF-8"), "C.UTF-8");
        assert_eq!(mask_env("KEYBOARD", "us"), "us");
    }

    #[test]
    fn nulls_stay_null_and_end_a_pending_value() {
        let given = vec![
            Some("--password".to_string()),
            None,
            Some("plain".to_string()),
        ];
        assert_eq!(
            mask_args(&given),
            vec![
                Some("--password".to_string()),
                None,
                Some("plain".to_string())
            ]
        );
    }
}
