//! Reads every C function's declaration in sql/ (`CREATE FUNCTION ... LANGUAGE c AS
//! 'MODULE_PATHNAME', '<symbol>'`) and writes, for each, the struct its Rust entry point reads
//! its arguments into: one field per argument, by the name and type the declaration gives it
//! (src/api/arguments.rs). A function's signature is written once, in sql/; a renamed, added or
//! retyped argument changes the Rust that reads it, or fails to compile. With it, the function's
//! info record (`pg_finfo_<symbol>`), which PostgreSQL looks up beside the symbol.

use std::fmt::Write;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=sql");
    let mut declarations = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir("sql")
        .expect("sql/ is beside build.rs")
        .map(|entry| entry.expect("a file of sql/").path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(path).expect("sql/ files are text");
        declarations.extend(c_functions(&path.display().to_string(), &tokens(&text)));
    }
    let mut generated = String::new();
    for declaration in &declarations {
        declaration.write(&mut generated);
    }
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("arguments.rs"), generated).expect("OUT_DIR is writable");
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// A quoted string's contents.
    Text(String),
    Punct(char),
}

/// The tokens of a SQL file, without comments and dollar-quoted bodies.
fn tokens(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '\'' {
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        text.push('\'');
                        i += 2;
                        continue;
                    }
                    break;
                }
                text.push(chars[i]);
                i += 1;
            }
            i += 1;
            tokens.push(Token::Text(text));
        } else if c == '$' && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            // A parameter of a SQL function's body (BEGIN ATOMIC).
            tokens.push(Token::Punct(c));
            i += 1;
        } else if c == '$' {
            let end = (i + 1..chars.len())
                .find(|&j| chars[j] == '$')
                .expect("a closed $tag$");
            let tag: String = chars[i..=end].iter().collect();
            let body: String = chars[end + 1..].iter().collect();
            let close = body.find(&tag).expect("a dollar-quoted body ends");
            i = end + 1 + body[..close].chars().count() + tag.chars().count();
        } else if c == '"' {
            let end = (i + 1..chars.len())
                .find(|&j| chars[j] == '"')
                .expect("a closed quote");
            tokens.push(Token::Word(chars[i + 1..end].iter().collect()));
            i = end + 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            tokens.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

fn word(token: Option<&Token>, expected: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.eq_ignore_ascii_case(expected))
}

struct Argument {
    name: String,
    sql_type: String,
}

struct Declaration {
    file: String,
    name: String,
    symbol: String,
    arguments: Vec<Argument>,
}

/// The declarations of C functions among the statements of a file.
fn c_functions(file: &str, tokens: &[Token]) -> Vec<Declaration> {
    let mut found = Vec::new();
    for statement in tokens.split(|t| *t == Token::Punct(';')) {
        let mut at = 0;
        if !word(statement.first(), "CREATE") {
            continue;
        }
        at += 1;
        if word(statement.get(at), "OR") {
            at += 2;
        }
        if !word(statement.get(at), "FUNCTION") {
            continue;
        }
        let Some(Token::Word(name)) = statement.get(at + 1) else {
            continue;
        };
        let symbol = statement.windows(3).find_map(|w| match w {
            [Token::Text(module), Token::Punct(','), Token::Text(symbol)]
                if module == "MODULE_PATHNAME" =>
            {
                Some(symbol.clone())
            }
            _ => None,
        });
        let Some(symbol) = symbol else { continue };
        found.push(Declaration {
            file: file.to_owned(),
            name: name.clone(),
            symbol,
            arguments: arguments(&statement[at + 2..]),
        });
    }
    found
}

/// The input arguments of a parenthesised list of them (the tokens from its `(` on).
fn arguments(tokens: &[Token]) -> Vec<Argument> {
    assert_eq!(
        tokens.first(),
        Some(&Token::Punct('(')),
        "a function's arguments in parentheses"
    );
    let mut depth = 0;
    let mut list: Vec<Vec<&Token>> = vec![Vec::new()];
    for token in &tokens[1..] {
        match token {
            Token::Punct('(' | '[') => depth += 1,
            Token::Punct(')') if depth == 0 => break,
            Token::Punct(')' | ']') => depth -= 1,
            Token::Punct(',') if depth == 0 => {
                list.push(Vec::new());
                continue;
            }
            _ => {}
        }
        list.last_mut().expect("a list").push(token);
    }
    list.into_iter()
        .filter(|argument| !argument.is_empty())
        .filter_map(|argument| {
            let mut words = argument.as_slice();
            match words.first() {
                Some(Token::Word(mode)) if mode.eq_ignore_ascii_case("OUT") => return None,
                Some(Token::Word(mode)) if mode.eq_ignore_ascii_case("IN") => words = &words[1..],
                _ => {}
            }
            let Some(Token::Word(name)) = words.first() else {
                panic!("every argument has a name: {argument:?}")
            };
            let end = words
                .iter()
                .position(|t| word(Some(t), "DEFAULT") || **t == Token::Punct('='))
                .unwrap_or(words.len());
            let sql_type = words[1..end]
                .iter()
                .map(|t| match t {
                    Token::Word(w) => w.to_lowercase(),
                    Token::Punct(c) => c.to_string(),
                    Token::Text(t) => panic!("a type is not a string: {t}"),
                })
                .collect::<Vec<_>>()
                .join(" ")
                .replace(" [ ]", "[]");
            Some(Argument {
                name: name.clone(),
                sql_type,
            })
        })
        .collect()
}

/// The Rust type an argument of a SQL type is read as; `Untyped` where only its datum is used.
fn rust_type(sql_type: &str) -> String {
    if let Some(element) = sql_type.strip_suffix("[]") {
        return match rust_type(element).as_str() {
            "Untyped" => "Untyped".into(),
            element => format!("Vec<Option<{element}>>"),
        };
    }
    match sql_type {
        "text" => "String",
        "integer" => "i32",
        "bigint" => "i64",
        "boolean" => "bool",
        "double precision" => "f64",
        "numeric" => "AnyNumeric",
        "uuid" => "Uuid",
        "jsonb" => "Json",
        "interval" => "Interval",
        "timestamptz" => "TimestampWithTimeZone",
        "date" => "Date",
        "oid" | "regrole" | "regclass" => "Oid",
        _ => "Untyped",
    }
    .into()
}

fn field(name: &str) -> String {
    match name {
        "type" | "ref" | "match" | "in" | "as" | "for" | "fn" | "mod" | "use" | "where" => {
            format!("r#{name}")
        }
        _ => name.into(),
    }
}

impl Declaration {
    fn write(&self, out: &mut String) {
        let signature: Vec<String> = self
            .arguments
            .iter()
            .map(|a| format!("{} {}", a.name, a.sql_type))
            .collect();
        writeln!(
            out,
            "/// {}({}), declared in {}.",
            self.name,
            signature.join(", "),
            self.file
        )
        .unwrap();
        writeln!(out, "pub mod {} {{", self.symbol).unwrap();
        writeln!(out, "    #[allow(unused_imports)]\n    use super::*;").unwrap();
        writeln!(out, "    pub struct Arguments {{").unwrap();
        for argument in &self.arguments {
            writeln!(
                out,
                "        pub {}: Arg<{}>,",
                field(&argument.name),
                rust_type(&argument.sql_type)
            )
            .unwrap();
        }
        writeln!(out, "    }}").unwrap();
        writeln!(out, "    impl Arguments {{").unwrap();
        writeln!(out, "        #[allow(unused_variables)]").unwrap();
        writeln!(
            out,
            "        pub fn read(fcinfo: FunctionCallInfo) -> Self {{"
        )
        .unwrap();
        writeln!(out, "            Arguments {{").unwrap();
        for (position, argument) in self.arguments.iter().enumerate() {
            writeln!(
                out,
                "                {}: Arg::read(fcinfo, {position}, \"{}\"),",
                field(&argument.name),
                argument.name
            )
            .unwrap();
        }
        writeln!(out, "            }}\n        }}\n    }}\n}}").unwrap();
        // The record that says the function follows PostgreSQL's version-1 calling convention.
        writeln!(
            out,
            "#[no_mangle]\n#[doc(hidden)]\npub extern \"C\" fn pg_finfo_{}() -> &'static pg_sys::Pg_finfo_record {{\n    &VERSION_1\n}}",
            self.symbol
        )
        .unwrap();
    }
}
