//! `SKILL.md`: YAML front matter between `---` lines, then the Markdown body. Errors carry the
//! 1-based line of the file they were found on.

use serde::Deserialize;

/// Longest skill name.
pub const NAME_MAX: usize = 64;
/// Longest description.
const DESCRIPTION_MAX: usize = 1024;

/// The front matter rein reads (other keys, such as `license` or `metadata`, are allowed and
/// ignored).
#[derive(Debug)]
pub struct FrontMatter {
    /// `name`.
    pub name: String,
    /// Line of the `name` key.
    pub name_line: usize,
    /// `description`.
    pub description: String,
    /// `allowed-tools`, split.
    pub allowed_tools: Vec<String>,
}

#[derive(Deserialize)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "allowed-tools")]
    allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools` as a space- or comma-separated string, or a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    Text(String),
    List(Vec<String>),
}

/// Split `text` into front matter and body, or say on which line what is wrong.
pub fn parse_skill_md(text: &str) -> Result<(FrontMatter, String), (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err((
            1,
            "SKILL.md must open with YAML front matter between `---` lines".into(),
        ));
    }
    let mut yaml = String::new();
    // Byte offset of the body: lines end at `\n`, so it is always a character boundary.
    let mut consumed = first.len();
    let mut closed = false;
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err((
            1,
            "the front matter opened on line 1 is never closed with `---`".into(),
        ));
    }
    let body = text[consumed..].trim().to_owned();
    // The YAML starts on the file's second line.
    let raw: Raw = serde_norway::from_str(&yaml).map_err(|e| {
        let line = e.location().map_or(1, |l| l.line() + 1);
        (line, format!("invalid front matter: {e}"))
    })?;
    let key_line = |key: &str| {
        yaml.lines()
            .position(|l| l.starts_with(&format!("{key}:")))
            .map_or(1, |i| i + 2)
    };
    let name_line = key_line("name");
    let name = raw
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .ok_or((1, "the front matter has no `name`".to_owned()))?;
    if !valid_name(&name) {
        return Err((
            name_line,
            format!(
                "`name: {name}`: use 1-{NAME_MAX} lowercase letters, digits and single hyphens"
            ),
        ));
    }
    let description = raw
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .ok_or((1, "the front matter has no `description`".to_owned()))?;
    if description.chars().count() > DESCRIPTION_MAX {
        return Err((
            key_line("description"),
            format!("`description` is longer than {DESCRIPTION_MAX} characters"),
        ));
    }
    let allowed_tools = match raw.allowed_tools {
        None => Vec::new(),
        Some(AllowedTools::Text(t)) => t
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(AllowedTools::List(l)) => l.into_iter().map(|s| s.trim().to_owned()).collect(),
    };
    Ok((
        FrontMatter {
            name,
            name_line,
            description,
            allowed_tools,
        },
        body,
    ))
}

/// Skill names as [`valid_name`] accepts them (with at most [`NAME_MAX`] characters).
pub const NAME_PATTERN: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";

/// Whether `name` is a skill name: 1-64 lowercase letters, digits and single inner hyphens.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_front_matter_and_body() {
        let text = "---\nname: pdf-tools\ndescription: Work with PDFs.\nallowed-tools: files/read shell\nlicense: MIT\n---\n# PDF\n\nUse it.\n";
        let (front, body) = parse_skill_md(text).expect("parses");
        assert_eq!(front.name, "pdf-tools");
        assert_eq!(front.name_line, 2);
        assert_eq!(front.description, "Work with PDFs.");
        assert_eq!(front.allowed_tools, ["files/read", "shell"]);
        assert_eq!(body, "# PDF\n\nUse it.");
    }

    #[test]
    fn errors_name_the_file_line() {
        let bad_yaml = "---\nname: x\ndescription: [unclosed\n---\nbody";
        let (line, message) = parse_skill_md(bad_yaml).expect_err("bad yaml");
        assert!((3..=4).contains(&line), "line {line}: {message}");
        let bad_name = "---\ndescription: d\nname: Not_Valid\n---\n";
        assert_eq!(parse_skill_md(bad_name).expect_err("bad name").0, 3);
        assert_eq!(parse_skill_md("# no front matter").expect_err("none").0, 1);
        assert_eq!(parse_skill_md("---\nname: a\n").expect_err("open").0, 1);
        let no_description = "---\nname: a\n---\n";
        assert!(
            parse_skill_md(no_description)
                .expect_err("desc")
                .1
                .contains("description")
        );
    }
}
