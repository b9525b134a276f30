// SPDX-License-Identifier: MIT OR Apache-2.0
//! A reader of protobuf's text format, the syntax of nvinferserver configuration files, into an
//! untyped tree: messages of named fields whose values are scalars or messages. The schema (which
//! names exist, their types) is applied by the caller, so that a wrong value is reported with
//! the field's full name.
//!
//! Accepted: `name: value` and `name { ... }` / `name: { ... }` (or `< ... >`), repeated fields
//! written several times or as `name: [a, b]` / `name [{ ... }, { ... }]`, `#` comments, fields
//! separated by whitespace, `,` or `;`, strings in `"` or `'` with C escapes (adjacent strings
//! are joined), decimal, hexadecimal and octal integers, floats with an `f` suffix, `-inf` and
//! `nan`. Not accepted: extension and `Any` names in brackets (nvinferserver's schema has none).
//!
//! Bounded: at most [`MAX_TEXT_BYTES`] of text, [`MAX_FIELDS`] fields and [`MAX_DEPTH`] nested
//! messages (NVIDIA's largest sample has about a hundred fields, six deep), so a hostile or
//! corrupt file costs little memory and no deep recursion. Tokens are read one at a time.

use std::fmt;

/// The largest text read: NVIDIA's configuration files are a few KiB.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// The most fields (list items included) a file may hold.
pub const MAX_FIELDS: usize = 20_000;
/// The deepest nesting of messages.
pub const MAX_DEPTH: usize = 32;

/// A message: its fields in the order written (a repeated field appears once per value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    pub fields: Vec<Field>,
}

/// One `name: value` or `name { ... }`, and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub line: usize,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(Scalar),
    Message(Message),
}

/// A scalar as written: what it means depends on the field's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// An identifier: an enum value, `true`, `false`, `inf`, `nan`.
    Ident(String),
    /// A number as written, with its sign.
    Number(String),
    /// A string, escapes resolved.
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Ident(s) | Scalar::Number(s) => f.write_str(s),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A syntax error and the line it is on (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub message: String,
}

/// Parses `text` as the fields of one top-level message.
pub fn parse(text: &str) -> Result<Message, SyntaxError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(SyntaxError {
            line: 1,
            message: format!(
                "{} bytes of text, more than the {MAX_TEXT_BYTES} a configuration may have",
                text.len()
            ),
        });
    }
    let mut parser = Parser {
        lexer: Lexer {
            src: text.as_bytes(),
            pos: 0,
            line: 1,
            peeked: None,
        },
        fields: 0,
    };
    parser.message(None, 0)
}

/// The first identifier of `text` outside `#` comments, if the text starts with one: how a
/// configuration's format is told from its content.
pub fn first_identifier(text: &str) -> Option<&str> {
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        rest = rest.trim_start();
        match rest.strip_prefix('#') {
            Some(comment) => rest = comment.split_once('\n').map_or("", |(_, after)| after),
            None => break,
        }
    }
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let ident = &rest[..end];
    ident
        .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        .then_some(ident)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Number(String),
    Str(String),
    Punct(u8),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) | Tok::Number(s) => write!(f, "`{s}`"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Punct(c) => write!(f, "`{}`", *c as char),
        }
    }
}

struct Token {
    tok: Tok,
    line: usize,
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: usize,
    peeked: Option<Token>,
}

impl Lexer<'_> {
    fn error(&self, line: usize, message: String) -> SyntaxError {
        SyntaxError { line, message }
    }

    fn peek(&mut self) -> Result<Option<&Token>, SyntaxError> {
        if self.peeked.is_none() {
            self.peeked = self.lex()?;
        }
        Ok(self.peeked.as_ref())
    }

    fn next(&mut self) -> Result<Option<Token>, SyntaxError> {
        match self.peeked.take() {
            Some(t) => Ok(Some(t)),
            None => self.lex(),
        }
    }

    /// Whether the next token is the punctuation `c`; consumes it if so.
    fn eat(&mut self, c: u8) -> Result<bool, SyntaxError> {
        let found = matches!(self.peek()?, Some(Token { tok: Tok::Punct(p), .. }) if *p == c);
        if found {
            self.peeked = None;
        }
        Ok(found)
    }

    /// The line of the next token, or of the end of the text.
    fn line(&mut self) -> Result<usize, SyntaxError> {
        let end = self.line;
        Ok(self.peek()?.map_or(end, |t| t.line))
    }

    fn lex(&mut self) -> Result<Option<Token>, SyntaxError> {
        // Whitespace and comments.
        while let Some(&c) = self.src.get(self.pos) {
            match c {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'#' => {
                    while self.src.get(self.pos).is_some_and(|&c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        let line = self.line;
        let Some(&c) = self.src.get(self.pos) else {
            return Ok(None);
        };
        let start = self.pos;
        let tok = match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                self.pos += 1;
                while self
                    .src
                    .get(self.pos)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    self.pos += 1;
                }
                Tok::Ident(self.text(start))
            }
            b'0'..=b'9' => self.number(start),
            b'.' if self.src.get(self.pos + 1).is_some_and(u8::is_ascii_digit) => {
                self.number(start)
            }
            b'"' | b'\'' => Tok::Str(self.string(c, line)?),
            b'{' | b'}' | b'[' | b']' | b'<' | b'>' | b':' | b',' | b';' | b'-' => {
                self.pos += 1;
                Tok::Punct(c)
            }
            _ => {
                let shown = std::str::from_utf8(&self.src[start..])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                return Err(self.error(line, format!("unexpected character {shown:?}")));
            }
        };
        Ok(Some(Token { tok, line }))
    }

    fn text(&self, start: usize) -> String {
        String::from_utf8_lossy(&self.src[start..self.pos]).into_owned()
    }

    /// A number's characters: digits, letters (hex digits, exponents, an `f` suffix), dots, and
    /// a sign right after a decimal exponent. Whether they form a number the field's type
    /// decides.
    fn number(&mut self, start: usize) -> Tok {
        let hex = self.src[start..].starts_with(b"0x") || self.src[start..].starts_with(b"0X");
        while let Some(&c) = self.src.get(self.pos) {
            let after_exponent = self
                .pos
                .checked_sub(1)
                .and_then(|i| self.src.get(i))
                .is_some_and(|&p| p == b'e' || p == b'E');
            let exponent_sign = (c == b'+' || c == b'-') && !hex && after_exponent;
            if c.is_ascii_alphanumeric() || c == b'.' || exponent_sign {
                self.pos += 1;
            } else {
                break;
            }
        }
        Tok::Number(self.text(start))
    }

    fn string(&mut self, quote: u8, line: usize) -> Result<String, SyntaxError> {
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            let Some(&c) = self.src.get(self.pos) else {
                return Err(self.error(line, "unterminated string".into()));
            };
            self.pos += 1;
            match c {
                b'\n' => return Err(self.error(line, "unterminated string (end of line)".into())),
                c if c == quote => break,
                b'\\' => self.escape(&mut bytes, line)?,
                c => bytes.push(c),
            }
        }
        String::from_utf8(bytes)
            .map_err(|_| self.error(line, "a string whose escapes make no UTF-8 text".into()))
    }

    fn escape(&mut self, out: &mut Vec<u8>, line: usize) -> Result<(), SyntaxError> {
        let Some(&c) = self.src.get(self.pos) else {
            return Err(self.error(line, "unterminated string".into()));
        };
        self.pos += 1;
        let simple = match c {
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'v' => Some(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => Some(c),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(());
        }
        match c {
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.src.get(self.pos) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                let byte = u8::try_from(value).map_err(|_| {
                    self.error(line, format!("octal escape \\{value:o} is above \\377"))
                })?;
                out.push(byte);
            }
            b'x' | b'X' => {
                let value = self.hex_digits(1, 2, line)?;
                // At most two hex digits: always a byte.
                out.push(value as u8);
            }
            b'u' | b'U' => {
                let n = if c == b'u' { 4 } else { 8 };
                let value = self.hex_digits(n, n, line)?;
                let ch = char::from_u32(value).ok_or_else(|| {
                    self.error(line, format!("escape \\{} names no character", c as char))
                })?;
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            }
            _ => {
                return Err(self.error(
                    line,
                    format!("unknown escape \\{}", (c as char).escape_default()),
                ));
            }
        }
        Ok(())
    }

    fn hex_digits(&mut self, least: usize, most: usize, line: usize) -> Result<u32, SyntaxError> {
        let mut value = 0u32;
        let mut n = 0;
        while n < most {
            let Some(d) = self
                .src
                .get(self.pos)
                .and_then(|&c| (c as char).to_digit(16))
            else {
                break;
            };
            value = value * 16 + d;
            self.pos += 1;
            n += 1;
        }
        if n < least {
            return Err(self.error(line, format!("escape needs {least} hexadecimal digit(s)")));
        }
        Ok(value)
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    /// Fields read so far, against [`MAX_FIELDS`].
    fields: usize,
}

impl Parser<'_> {
    fn error(&self, line: usize, message: String) -> SyntaxError {
        SyntaxError { line, message }
    }

    /// The fields up to `close` (`}` or `>`, opened on `opened`), or to the end of the text.
    fn message(
        &mut self,
        close: Option<(u8, usize)>,
        depth: usize,
    ) -> Result<Message, SyntaxError> {
        let mut message = Message::default();
        loop {
            let Some(Token { tok, line }) = self.lexer.next()? else {
                return match close {
                    Some((c, opened)) => Err(self.error(
                        self.lexer.line,
                        format!(
                            "end of file: the message opened on line {opened} needs a `{}`",
                            c as char
                        ),
                    )),
                    None => Ok(message),
                };
            };
            match tok {
                Tok::Punct(c) if close.is_some_and(|(close, _)| close == c) => return Ok(message),
                Tok::Ident(name) => {
                    self.field(name, line, depth, &mut message.fields)?;
                    // An optional separator.
                    if !self.lexer.eat(b',')? {
                        self.lexer.eat(b';')?;
                    }
                }
                Tok::Punct(b'[') => {
                    return Err(self.error(
                        line,
                        "extension or Any field names (`[...]`) are not used by nvinferserver"
                            .into(),
                    ));
                }
                other => {
                    return Err(self.error(line, format!("expected a field name, found {other}")));
                }
            }
        }
    }

    fn count(&mut self, line: usize) -> Result<(), SyntaxError> {
        self.fields += 1;
        if self.fields > MAX_FIELDS {
            return Err(self.error(
                line,
                format!("more than {MAX_FIELDS} fields: not a configuration"),
            ));
        }
        Ok(())
    }

    fn field(
        &mut self,
        name: String,
        line: usize,
        depth: usize,
        out: &mut Vec<Field>,
    ) -> Result<(), SyntaxError> {
        let colon = self.lexer.eat(b':')?;
        if self.lexer.eat(b'[')? {
            return self.list(name, line, depth, out);
        }
        let value = self.value(&name, colon, depth)?;
        self.count(line)?;
        out.push(Field { name, line, value });
        Ok(())
    }

    /// The items of `name: [a, b]` or `name [{...}, {...}]`, after the `[`; each is a field of
    /// its own, on its own line.
    fn list(
        &mut self,
        name: String,
        opened: usize,
        depth: usize,
        out: &mut Vec<Field>,
    ) -> Result<(), SyntaxError> {
        if self.lexer.eat(b']')? {
            return Ok(());
        }
        loop {
            let line = self.lexer.line()?;
            let value = self.value(&name, true, depth)?;
            self.count(line)?;
            out.push(Field {
                name: name.clone(),
                line,
                value,
            });
            if self.lexer.eat(b',')? {
                continue;
            }
            if self.lexer.eat(b']')? {
                return Ok(());
            }
            let line = self.lexer.line()?;
            let found = self.describe_next()?;
            return Err(self.error(
                line,
                format!(
                    "field `{name}`: expected `,` or `]` in the list opened on line {opened}, \
                     found {found}"
                ),
            ));
        }
    }

    fn describe_next(&mut self) -> Result<String, SyntaxError> {
        Ok(self
            .lexer
            .peek()?
            .map_or_else(|| "end of file".to_string(), |t| t.tok.to_string()))
    }

    /// A message (`{...}` or `<...>`) or, after a colon, a scalar.
    fn value(&mut self, name: &str, colon: bool, depth: usize) -> Result<Value, SyntaxError> {
        let line = self.lexer.line()?;
        for (open, close) in [(b'{', b'}'), (b'<', b'>')] {
            if self.lexer.eat(open)? {
                if depth + 1 > MAX_DEPTH {
                    return Err(self.error(
                        line,
                        format!("field `{name}`: messages nested more than {MAX_DEPTH} deep"),
                    ));
                }
                return self
                    .message(Some((close, line)), depth + 1)
                    .map(Value::Message);
            }
        }
        if !colon {
            let found = self.describe_next()?;
            return Err(self.error(
                line,
                format!("field `{name}`: expected `:` or `{{`, found {found}"),
            ));
        }
        self.scalar(name).map(Value::Scalar)
    }

    fn scalar(&mut self, name: &str) -> Result<Scalar, SyntaxError> {
        let line = self.lexer.line()?;
        let Some(Token { tok, .. }) = self.lexer.next()? else {
            return Err(self.error(
                line,
                format!("field `{name}`: expected a value, found end of file"),
            ));
        };
        match tok {
            Tok::Ident(s) => Ok(Scalar::Ident(s)),
            Tok::Number(s) => Ok(Scalar::Number(s)),
            Tok::Str(mut s) => {
                // Adjacent strings are one string.
                while let Some(Token {
                    tok: Tok::Str(_), ..
                }) = self.lexer.peek()?
                {
                    if let Some(Token {
                        tok: Tok::Str(more),
                        ..
                    }) = self.lexer.next()?
                    {
                        if s.len() + more.len() > MAX_TEXT_BYTES {
                            return Err(self.error(line, "a string longer than the text".into()));
                        }
                        s.push_str(&more);
                    }
                }
                Ok(Scalar::Str(s))
            }
            Tok::Punct(b'-') => match self.lexer.next()? {
                Some(Token {
                    tok: Tok::Number(n),
                    ..
                }) => Ok(Scalar::Number(format!("-{n}"))),
                Some(Token {
                    tok: Tok::Ident(i), ..
                }) if ["inf", "infinity", "nan"].contains(&i.to_ascii_lowercase().as_str()) => {
                    Ok(Scalar::Number(format!("-{i}")))
                }
                other => Err(self.error(
                    line,
                    format!(
                        "field `{name}`: expected a number after `-`, found {}",
                        other.map_or_else(|| "end of file".to_string(), |t| t.tok.to_string())
                    ),
                )),
            },
            other => Err(self.error(
                line,
                format!("field `{name}`: expected a value, found {other}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(m: &Message, name: &str) -> Scalar {
        let f = m.fields.iter().find(|f| f.name == name).unwrap();
        match &f.value {
            Value::Scalar(s) => s.clone(),
            Value::Message(_) => panic!("{name} is a message"),
        }
    }

    fn message<'m>(m: &'m Message, name: &str) -> &'m Message {
        match &m.fields.iter().find(|f| f.name == name).unwrap().value {
            Value::Message(m) => m,
            Value::Scalar(_) => panic!("{name} is a scalar"),
        }
    }

    #[test]
    fn nesting_lists_comments_and_lines() {
        let text = "# a comment\n\
                    infer_config {\n\
                    \x20 unique_id: 1  # trailing comment\n\
                    \x20 gpu_ids: [0]\n\
                    \x20 backend {\n\
                    \x20   inputs: [ {\n\
                    \x20     name: \"input_1:0\"\n\
                    \x20   }]\n\
                    \x20   outputs: [\n\
                    \x20     {name: \"a\"},\n\
                    \x20     {name: \"b\"}\n\
                    \x20   ]\n\
                    \x20   triton: < model_name: 'm' version: -1 >\n\
                    \x20 }\n\
                    \x20 postprocess { detection { nms {confidence_threshold:0.2, topk:20; iou_threshold:.5} } }\n\
                    }\n\
                    input_control { operate_on_class_ids: [0, 2, 0x10] }\n";
        let top = parse(text).unwrap();
        assert_eq!(top.fields.len(), 2);
        assert_eq!(top.fields[0].line, 2);
        let infer = message(&top, "infer_config");
        assert_eq!(scalar(infer, "unique_id"), Scalar::Number("1".into()));
        assert_eq!(infer.fields[0].line, 3);
        let backend = message(infer, "backend");
        let inputs: Vec<&Field> = backend
            .fields
            .iter()
            .filter(|f| f.name == "inputs")
            .collect();
        assert_eq!(inputs.len(), 1);
        assert_eq!(inputs[0].line, 6);
        let outputs: Vec<&Field> = backend
            .fields
            .iter()
            .filter(|f| f.name == "outputs")
            .collect();
        assert_eq!(
            outputs.iter().map(|f| f.line).collect::<Vec<_>>(),
            vec![10, 11]
        );
        let triton = message(backend, "triton");
        assert_eq!(scalar(triton, "model_name"), Scalar::Str("m".into()));
        assert_eq!(scalar(triton, "version"), Scalar::Number("-1".into()));
        let nms = message(message(message(infer, "postprocess"), "detection"), "nms");
        assert_eq!(nms.fields.len(), 3);
        assert_eq!(scalar(nms, "iou_threshold"), Scalar::Number(".5".into()));
        let ids: Vec<Scalar> = message(&top, "input_control")
            .fields
            .iter()
            .map(|f| match &f.value {
                Value::Scalar(s) => s.clone(),
                Value::Message(_) => panic!(),
            })
            .collect();
        assert_eq!(
            ids,
            ["0", "2", "0x10"]
                .map(|n| Scalar::Number(n.into()))
                .to_vec()
        );
        assert_eq!(parse("a: []\nb {}\nc: {}").unwrap().fields.len(), 2);
    }

    #[test]
    fn strings_and_numbers() {
        let top = parse(
            "a: \"x\\ty\\\"z\\\\\" 'q\\'' \"\\101\\x42\\u00e9\\U0001F600\"\n\
             b: 1e-5 c: -inf d: 5.0f e: -.5 f: IMAGE_FORMAT_RGB g: 'caf\u{e9}'",
        )
        .unwrap();
        assert_eq!(
            scalar(&top, "a"),
            Scalar::Str("x\ty\"z\\q'AB\u{e9}\u{1F600}".into())
        );
        assert_eq!(scalar(&top, "b"), Scalar::Number("1e-5".into()));
        assert_eq!(scalar(&top, "c"), Scalar::Number("-inf".into()));
        assert_eq!(scalar(&top, "d"), Scalar::Number("5.0f".into()));
        assert_eq!(scalar(&top, "e"), Scalar::Number("-.5".into()));
        assert_eq!(scalar(&top, "f"), Scalar::Ident("IMAGE_FORMAT_RGB".into()));
        assert_eq!(scalar(&top, "g"), Scalar::Str("caf\u{e9}".into()));
    }

    #[test]
    fn errors_name_the_line() {
        let err = |text: &str| parse(text).unwrap_err();
        let e = err("a {\n  b: 1\n");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("opened on line 1 needs a `}`"), "{e:?}");
        let e = err("a {\n b 1\n}");
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("field `b`: expected `:` or `{`"),
            "{e:?}"
        );
        let e = err("a: \"open\n");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("unterminated string"), "{e:?}");
        let e = err("x: 1\ny: [1, 2\nz: 3");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("expected `,` or `]`"), "{e:?}");
        let e = err("\n\n}");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("expected a field name"), "{e:?}");
        let e = err("a: \"\\q\"");
        assert!(e.message.contains("unknown escape"), "{e:?}");
        let e = err("a: \"\\777\"");
        assert!(e.message.contains("above \\377"), "{e:?}");
        let e = err("a: \"\\xff\"");
        assert!(e.message.contains("UTF-8"), "{e:?}");
        let e = err("a: 1 @");
        assert!(e.message.contains("unexpected character '@'"), "{e:?}");
        let e = err("[ext.field]: 1");
        assert!(e.message.contains("extension"), "{e:?}");
        let e = err("a: -x");
        assert!(e.message.contains("expected a number after `-`"), "{e:?}");
        let e = err("a:");
        assert!(e.message.contains("found end of file"), "{e:?}");
    }

    #[test]
    fn depth_size_and_field_count_are_bounded() {
        let deep = |n: usize| format!("{}{}", "a {".repeat(n), "}".repeat(n));
        parse(&deep(MAX_DEPTH)).unwrap();
        let e = parse(&deep(MAX_DEPTH + 1)).unwrap_err();
        assert!(e.message.contains("nested more than"), "{e:?}");
        // Far deeper than any stack would allow if the depth were not bounded.
        let e = parse(&deep(200_000.min(MAX_TEXT_BYTES / 4))).unwrap_err();
        assert!(e.message.contains("nested more than"), "{e:?}");
        let e = parse(&"a: 1\n".repeat(MAX_FIELDS + 1)).unwrap_err();
        assert!(e.message.contains("more than"), "{e:?}");
        let list = format!("a: [{}]", vec!["1"; MAX_FIELDS + 1].join(","));
        assert!(parse(&list).is_err());
        let e = parse(&" ".repeat(MAX_TEXT_BYTES + 1)).unwrap_err();
        assert!(e.message.contains("bytes of text"), "{e:?}");
    }

    #[test]
    fn garbage_never_panics() {
        // A deterministic stream of bytes biased towards the format's own characters.
        let alphabet = b"{}[]<>:;,-#'\"\\\n ab_19.exf";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for round in 0..3000 {
            let len = round % 97;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let pick = (state % (alphabet.len() as u64 + 8)) as usize;
                bytes.push(alphabet.get(pick).copied().unwrap_or((state >> 40) as u8));
            }
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse(&text);
            let _ = first_identifier(&text);
        }
    }

    #[test]
    fn first_identifier_skips_comments() {
        assert_eq!(
            first_identifier("# c\n  # d\n\ninfer_config {"),
            Some("infer_config")
        );
        assert_eq!(
            first_identifier("\u{feff}input_control{}"),
            Some("input_control")
        );
        assert_eq!(first_identifier("[property]\nx=1"), None);
        assert_eq!(first_identifier("# only a comment"), None);
        assert_eq!(first_identifier("9abc"), None);
    }
}
