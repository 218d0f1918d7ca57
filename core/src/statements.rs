//! The extension's files of named statements (`src/api/<domain>.sql`): each statement starts
//! with a header naming it and declaring its parameters, and refers to them by name:
//!
//! ```sql
//! -- name: add_proxy(proxy oid, root oid, created_by oid)
//! -- (comment lines)
//! INSERT INTO proxies (proxy, root, created_by) VALUES ($proxy, $root, $created_by)
//! ```
//!
//! A header's list may go on over the comment lines that follow it. What PostgreSQL prepares is
//! the text with `$1`, `$2`, ... in the declared order, and the declared types; the code that
//! runs a statement gives its values by name.

/// A statement as PostgreSQL prepares it.
#[derive(Debug, PartialEq)]
pub struct Prepared {
    /// Each parameter's name and type, in the order of `$1`, `$2`, ...
    pub parameters: Vec<(String, String)>,
    pub text: String,
}

/// The statement `name` of `source`, without its lines from each `-- <part> {` to the next
/// `-- } <part>` of `omitted` (one text run in several forms). An error says what is wrong with
/// the file.
pub fn prepared(source: &str, name: &str, omitted: &[&str]) -> Result<Prepared, String> {
    let marker = format!("-- name: {name}");
    let start = source
        .match_indices(&marker)
        .map(|(at, _)| at + marker.len())
        .find(|&end| matches!(source[end..].chars().next(), Some('(' | '\n')))
        .ok_or_else(|| format!("no statement named {name}"))?;
    let rest = &source[start..];
    let rest = &rest[..rest.find("\n-- name: ").map_or(rest.len(), |end| end + 1)];
    let (parameters, body) = match rest.strip_prefix('(') {
        Some(list) => {
            let close = list
                .find(')')
                .ok_or_else(|| format!("statement {name}'s parameters have no )"))?;
            let declared = parameters(&list[..close].replace("\n--", " "))
                .map_err(|problem| format!("statement {name}: {problem}"))?;
            let body = &list[close + 1..];
            (
                declared,
                &body[body.find('\n').map_or(body.len(), |end| end + 1)..],
            )
        }
        None => (Vec::new(), &rest[1..]),
    };
    let mut text = body.to_owned();
    for part in omitted {
        text =
            without(&text, part).ok_or_else(|| format!("statement {name} has no part {part}"))?;
    }
    let names: Vec<&str> = parameters.iter().map(|(name, _)| name.as_str()).collect();
    let (text, used) =
        numbered(&text, &names).map_err(|problem| format!("statement {name}: {problem}"))?;
    if omitted.is_empty() {
        if let Some(unused) = names
            .iter()
            .zip(&used)
            .find_map(|(n, used)| (!used).then_some(n))
        {
            return Err(format!(
                "statement {name} declares ${unused} but does not use it"
            ));
        }
    }
    Ok(Prepared { parameters, text })
}

/// A header's list of parameters: `name type, ...`.
fn parameters(list: &str) -> Result<Vec<(String, String)>, String> {
    let mut declared: Vec<(String, String)> = Vec::new();
    for parameter in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, sql_type) = parameter
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("parameter {parameter} has no type"))?;
        if !is_name(name) {
            return Err(format!("{name} is not a parameter's name"));
        }
        if declared.iter().any(|(seen, _)| seen == name) {
            return Err(format!("parameter {name} is declared twice"));
        }
        let sql_type = sql_type.split_whitespace().collect::<Vec<_>>().join(" ");
        declared.push((name.to_owned(), sql_type));
    }
    Ok(declared)
}

fn is_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The text without the lines of `part`; None when it has none.
fn without(text: &str, part: &str) -> Option<String> {
    let (open, close) = (format!("-- {part} {{\n"), format!("-- }} {part}\n"));
    let (mut kept, mut rest) = (String::with_capacity(text.len()), text);
    while let Some(from) = rest.find(&open) {
        let to = rest[from..].find(&close)?;
        kept.push_str(&rest[..from]);
        rest = &rest[from + to + close.len()..];
    }
    (rest.len() != text.len()).then(|| kept + rest)
}

/// The text with each `$name` of `names` as `$n` (its place in `names`, from 1), and which of
/// them it used. Outside quotes and comments only; a `$` of any other name is an error, and so
/// is `$1`: a statement refers to its parameters by name.
fn numbered(text: &str, names: &[&str]) -> Result<(String, Vec<bool>), String> {
    let mut used = vec![false; names.len()];
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                for (_, inner) in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if text[at..].starts_with("--") => {
                let end = text[at..].find('\n').map_or(text.len(), |end| at + end);
                out.push_str(&text[at..end]);
                while chars.peek().is_some_and(|&(next, _)| next < end) {
                    chars.next();
                }
            }
            '$' => {
                let word: String = text[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let Some(place) = names.iter().position(|name| *name == word) else {
                    return Err(format!("${word} is not a declared parameter"));
                };
                used[place] = true;
                out.push_str(&format!("${}", place + 1));
                for _ in 0..word.len() {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    Ok((out, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "-- The statements of a domain.\n\n\
        -- name: add_proxy(proxy oid, root oid,\n\
        --                 created_by oid)\n\
        -- Its comment: $root is not read here.\n\
        INSERT INTO proxies VALUES ($proxy, $root, $created_by, '$kept', \"$also\");\n\n\
        -- name: add_proxy_again\n\
        SELECT 1;\n\n\
        -- name: claim(queue text, n integer, keys text[])\n\
        SELECT $queue, $n\n\
        -- keys {\n\
        , $keys\n\
        -- } keys\n\
        ;\n";

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn parameters_are_numbered_in_their_declared_order() {
        let add = prepared(SOURCE, "add_proxy", &[]).unwrap();
        assert_eq!(
            add.parameters,
            pairs(&[("proxy", "oid"), ("root", "oid"), ("created_by", "oid")])
        );
        assert_eq!(
            add.text,
            "-- Its comment: $root is not read here.\n\
             INSERT INTO proxies VALUES ($1, $2, $3, '$kept', \"$also\");\n\n"
        );
    }

    #[test]
    fn a_name_that_prefixes_another_is_not_it() {
        let again = prepared(SOURCE, "add_proxy_again", &[]).unwrap();
        assert_eq!(
            again,
            Prepared {
                parameters: Vec::new(),
                text: "SELECT 1;\n\n".into()
            }
        );
    }

    #[test]
    fn parts_are_left_out_with_their_parameters() {
        let whole = prepared(SOURCE, "claim", &[]).unwrap();
        assert_eq!(whole.text, "SELECT $1, $2\n-- keys {\n, $3\n-- } keys\n;\n");
        let short = prepared(SOURCE, "claim", &["keys"]).unwrap();
        assert_eq!(short.text, "SELECT $1, $2\n;\n");
        assert_eq!(short.parameters.len(), 3);
        assert_eq!(
            prepared(SOURCE, "claim", &["copies"]).unwrap_err(),
            "statement claim has no part copies"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let wrong = |source: &str| prepared(source, "s", &[]).unwrap_err();
        assert_eq!(wrong("-- name: t\nSELECT 1;\n"), "no statement named s");
        assert_eq!(
            wrong("-- name: s(a int\nSELECT $a;\n"),
            "statement s's parameters have no )"
        );
        assert_eq!(
            wrong("-- name: s(a)\nSELECT $a;\n"),
            "statement s: parameter a has no type"
        );
        assert_eq!(
            wrong("-- name: s(a int, a int)\nSELECT $a;\n"),
            "statement s: parameter a is declared twice"
        );
        assert_eq!(
            wrong("-- name: s(a int)\nSELECT $b;\n"),
            "statement s: $b is not a declared parameter"
        );
        assert_eq!(
            wrong("-- name: s(a int)\nSELECT $1;\n"),
            "statement s: $1 is not a declared parameter"
        );
        assert_eq!(
            wrong("-- name: s(a int, b int)\nSELECT $a;\n"),
            "statement s declares $b but does not use it"
        );
    }

    /// Every statement the extension prepares (src/api/*.sql) declares what it uses and uses what
    /// it declares, so none fails when it is first prepared.
    #[test]
    fn every_statement_of_the_extension_is_well_formed() {
        let api = concat!(env!("CARGO_MANIFEST_DIR"), "/../src/api");
        let mut statements = 0;
        for entry in std::fs::read_dir(api).expect("src/api beside core") {
            let path = entry.expect("a file").path();
            if path.extension().is_none_or(|e| e != "sql") {
                continue;
            }
            let source = std::fs::read_to_string(&path).expect("a text");
            for line in source.lines() {
                let Some(header) = line.strip_prefix("-- name: ") else {
                    continue;
                };
                let name = &header[..header.find('(').unwrap_or(header.len())];
                if let Err(problem) = prepared(&source, name, &[]) {
                    panic!("{}: {problem}", path.display());
                }
                statements += 1;
            }
        }
        assert!(statements > 300, "only {statements} statements found");
    }

    #[test]
    fn types_keep_their_words() {
        let source = "-- name: s(x double  precision, at timestamptz[])\nSELECT $x, $at;\n";
        let s = prepared(source, "s", &[]).unwrap();
        assert_eq!(
            s.parameters,
            pairs(&[("x", "double precision"), ("at", "timestamptz[]")])
        );
    }
}
