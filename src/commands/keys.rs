//! What a `send_keys` / `key_down` / `key_up` string means (COMMANDS.md `send_keys`): a key
//! name or a modifier chord is pressed, anything else is typed.
//!
//! Pure: the key table and the parser, unit-tested here; the keys reach the page through
//! `Tab::key_event` (`browser/tab.rs`).

use crate::browser::tab::KeyStroke;

/// Modifier bits of `Input.dispatchKeyEvent` (Alt 1, Control 2, Meta 4, Shift 8).
const ALT: i64 = 1;
const CONTROL: i64 = 2;
const META: i64 = 4;
const SHIFT: i64 = 8;

/// What a keys string asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keys {
    /// A key or chord: the modifiers in order (held), then at most one main key.
    Press(Vec<KeyStroke>),
    /// Free text, typed character by character into the focused element.
    Type(String),
}

/// `(name, key, code, keyCode, text)` of the named keys (case-insensitive names).
const NAMED: &[(&str, &str, &str, i64, &str)] = &[
    ("enter", "Enter", "Enter", 13, "\r"),
    ("escape", "Escape", "Escape", 27, ""),
    ("esc", "Escape", "Escape", 27, ""),
    ("tab", "Tab", "Tab", 9, ""),
    ("backspace", "Backspace", "Backspace", 8, ""),
    ("delete", "Delete", "Delete", 46, ""),
    ("insert", "Insert", "Insert", 45, ""),
    ("home", "Home", "Home", 36, ""),
    ("end", "End", "End", 35, ""),
    ("pageup", "PageUp", "PageUp", 33, ""),
    ("pagedown", "PageDown", "PageDown", 34, ""),
    ("arrowleft", "ArrowLeft", "ArrowLeft", 37, ""),
    ("arrowup", "ArrowUp", "ArrowUp", 38, ""),
    ("arrowright", "ArrowRight", "ArrowRight", 39, ""),
    ("arrowdown", "ArrowDown", "ArrowDown", 40, ""),
    ("space", " ", "Space", 32, " "),
    ("capslock", "CapsLock", "CapsLock", 20, ""),
    ("numlock", "NumLock", "NumLock", 144, ""),
    ("scrolllock", "ScrollLock", "ScrollLock", 145, ""),
    ("printscreen", "PrintScreen", "PrintScreen", 44, ""),
    ("contextmenu", "ContextMenu", "ContextMenu", 93, ""),
];

/// `(name, key, code, keyCode, bit)` of the modifiers.
const MODIFIERS: &[(&str, &str, &str, i64, i64)] = &[
    ("control", "Control", "ControlLeft", 17, CONTROL),
    ("ctrl", "Control", "ControlLeft", 17, CONTROL),
    ("alt", "Alt", "AltLeft", 18, ALT),
    ("shift", "Shift", "ShiftLeft", 16, SHIFT),
    ("meta", "Meta", "MetaLeft", 91, META),
    ("command", "Meta", "MetaLeft", 91, META),
    ("cmd", "Meta", "MetaLeft", 91, META),
];

fn modifier(name: &str) -> Option<KeyStroke> {
    let lower = name.to_ascii_lowercase();
    MODIFIERS
        .iter()
        .find(|m| m.0 == lower)
        .map(|&(_, key, code, key_code, bit)| KeyStroke {
            key: key.into(),
            code: code.into(),
            key_code,
            text: String::new(),
            modifiers: bit,
            location: 1,
        })
}

/// A named key (`Enter`, `F5`, `ArrowUp`, …), case-insensitive.
fn named(name: &str) -> Option<KeyStroke> {
    let lower = name.to_ascii_lowercase();
    if let Some(&(_, key, code, key_code, text)) = NAMED.iter().find(|k| k.0 == lower) {
        return Some(KeyStroke {
            key: key.into(),
            code: code.into(),
            key_code,
            text: text.into(),
            modifiers: 0,
            location: 0,
        });
    }
    let n: i64 = lower.strip_prefix('f')?.parse().ok()?;
    (1..=12).contains(&n).then(|| KeyStroke {
        key: format!("F{n}"),
        code: format!("F{n}"),
        key_code: 111 + n,
        text: String::new(),
        modifiers: 0,
        location: 0,
    })
}

/// One ASCII letter or digit as the last key of a chord; `shifted` gives a letter its upper
/// case (as the browser reports `key` with Shift held).
fn character(name: &str, shifted: bool) -> Option<KeyStroke> {
    let mut chars = name.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    let (key, code, key_code) = if c.is_ascii_alphabetic() {
        let upper = c.to_ascii_uppercase();
        let key = if shifted {
            upper
        } else {
            c.to_ascii_lowercase()
        };
        (
            key.to_string(),
            format!("Key{upper}"),
            i64::from(upper as u8),
        )
    } else if c.is_ascii_digit() {
        (c.to_string(), format!("Digit{c}"), i64::from(c as u8))
    } else {
        return None;
    };
    Some(KeyStroke {
        text: key.clone(),
        key,
        code,
        key_code,
        modifiers: 0,
        location: 0,
    })
}

/// Reads a keys string: a single key name, or modifiers joined by `+` ending with at most one
/// letter, digit or key name, is pressed; anything else is typed.
pub fn parse(raw: &str) -> Keys {
    if let Some(k) = named(raw).or_else(|| modifier(raw)) {
        return Keys::Press(vec![k]);
    }
    let parts: Vec<&str> = raw.split('+').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Keys::Type(raw.to_string());
    }
    let (last, mods) = parts.split_last().unwrap_or((&"", &[]));
    let mut held: Vec<KeyStroke> = Vec::new();
    for m in mods {
        match modifier(m) {
            Some(k) => held.push(k),
            None => return Keys::Type(raw.to_string()),
        }
    }
    let bits = held.iter().fold(0, |b, k| b | k.modifiers);
    let main = match modifier(last) {
        Some(k) => {
            held.push(k);
            None
        }
        None => match named(last).or_else(|| character(last, bits & SHIFT != 0)) {
            Some(k) => Some(k),
            None => return Keys::Type(raw.to_string()),
        },
    };
    if let Some(mut k) = main {
        // A chord with Control, Alt or Meta inserts no text (Shift alone does: Shift+a is "A").
        if bits & (CONTROL | ALT | META) != 0 {
            k.text.clear();
        }
        held.push(k);
    }
    Keys::Press(held)
}

/// One key to hold or release (`key_down`, `key_up`): a key name, a modifier, or one
/// character; `None` for anything longer.
pub fn single(raw: &str) -> Option<KeyStroke> {
    if let Some(k) = named(raw).or_else(|| modifier(raw)) {
        return Some(k);
    }
    if let Some(k) = character(raw, false) {
        return Some(k);
    }
    let mut chars = raw.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    Some(KeyStroke {
        key: c.to_string(),
        code: String::new(),
        key_code: 0,
        text: c.to_string(),
        modifiers: 0,
        location: 0,
    })
}

/// The modifier bits in force while each stroke of a chord goes down (each modifier counts
/// once it is held, as in a real keyboard).
pub fn modifiers_down(strokes: &[KeyStroke]) -> Vec<i64> {
    let mut bits = 0;
    strokes
        .iter()
        .map(|k| {
            if k.location == 1 {
                bits |= k.modifiers;
            }
            bits
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pressed(raw: &str) -> Vec<(String, String, i64, String)> {
        match parse(raw) {
            Keys::Press(k) => k
                .into_iter()
                .map(|k| (k.key, k.code, k.key_code, k.text))
                .collect(),
            Keys::Type(t) => panic!("{raw} was typed as {t}"),
        }
    }

    #[test]
    fn key_names_and_chords_are_pressed() {
        assert_eq!(
            pressed("enter"),
            vec![("Enter".into(), "Enter".into(), 13, "\r".into())]
        );
        assert_eq!(pressed("Esc")[0].0, "Escape");
        assert_eq!(pressed("F12")[0].2, 123);
        let chord = pressed("Control+Shift+T");
        assert_eq!(chord.len(), 3);
        assert_eq!(
            chord[2],
            ("T".into(), "KeyT".into(), 84, String::new()),
            "no text under Control"
        );
        assert_eq!(pressed("ctrl+a")[1].0, "a");
        assert_eq!(pressed("Shift+a")[1].3, "A", "Shift alone types");
        assert_eq!(pressed("Cmd+ArrowLeft")[1].0, "ArrowLeft");
        assert_eq!(pressed("Control+Shift").len(), 2);
        assert_eq!(pressed("Control+1")[1].1, "Digit1");
    }

    #[test]
    fn anything_else_is_typed() {
        for raw in [
            "hello",
            "你好",
            "a",
            "Control+A+B",
            "two words",
            "+",
            "Ctrl+",
            "Hyper+A",
        ] {
            assert_eq!(parse(raw), Keys::Type(raw.into()), "{raw}");
        }
    }

    #[test]
    fn single_keys_for_key_down() {
        assert_eq!(single("Shift").unwrap().modifiers, SHIFT);
        assert_eq!(single("a").unwrap().code, "KeyA");
        assert_eq!(single("é").unwrap().text, "é");
        assert_eq!(single("ab"), None);
    }

    #[test]
    fn modifiers_count_once_held() {
        let Keys::Press(k) = parse("Control+Shift+T") else {
            panic!()
        };
        assert_eq!(modifiers_down(&k), vec![2, 10, 10]);
    }
}
