//! The GUID files opensm.conf names for the routing engines: `root_guid_file`, `cn_guid_file`,
//! `io_guid_file` and `guid_routing_order_file`.
//!
//! OpenSM reads all four with one function, complib's `parse_node_map`. It reads the file with
//! `fgets` into a 256-byte buffer, so a longer line arrives as several. Each line is skipped
//! when blank or when its first non-space byte is `#`. Otherwise `strtoull` (base 0: `0x` is
//! hex, a leading `0` octal) reads a GUID, which must be followed by a space, a `#` or the
//! end. Anything after it is free text. The first line that breaks this rule stops the
//! reading: the GUIDs before it have already been handed to the engine, the rest are not read,
//! and the engine is told the file failed. What it does then is its own rule (ftree stops,
//! updn also finds roots itself, the routing order keeps what it read).

use ibqos_text::cnum::{self, is_c_space};
use ibqos_text::{Code, Diagnostic, Location, MAX_PER_CODE};

/// The options that name a GUID file, in `opensm -c` order.
pub const GUID_FILE_OPTIONS: [&str; 4] = [
    "root_guid_file",
    "cn_guid_file",
    "io_guid_file",
    "guid_routing_order_file",
];

/// `fgets`' buffer in `parse_node_map`: a line is read at most 255 bytes at a time.
const LINE_BUFFER: usize = 256;

/// What an engine gets from a GUID file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuidList {
    /// The GUIDs OpenSM hands to the engine, in file order (duplicates kept).
    pub guids: Vec<u64>,
    /// Whether OpenSM read the file to its end. When not (it cannot be opened, or a line is
    /// not a GUID), the engine sees the file as failed, with [`GuidList::guids`] already given
    /// to it.
    pub complete: bool,
}

/// A GUID file as OpenSM reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuidFile {
    pub list: GuidList,
    /// Where OpenSM stopped, and every GUID it reads as another number than written.
    pub diagnostics: Vec<Diagnostic>,
}

/// What each engine that reads `option` does when its file fails, for messages.
pub fn when_failed(option: &str) -> &'static str {
    match option {
        "root_guid_file" => {
            "updn keeps the roots read so far and finds more itself; ftree fails and the next \
             engine routes"
        }
        "cn_guid_file" | "io_guid_file" => "ftree, dfsssp and sssp fail and the next engine routes",
        _ => "the minhop family routes the ports it lists so far first, then the rest",
    }
}

/// Reads the GUID file at `path`, which option `option` names, as OpenSM does when it routes.
pub fn load(option: &str, path: &str) -> GuidFile {
    match std::fs::read(path) {
        Ok(bytes) => parse(option, path, &bytes),
        Err(error) => GuidFile {
            list: GuidList::default(),
            diagnostics: vec![
                Diagnostic::error(
                    Code::GuidFileUnreadable,
                    format!(
                        "cannot read {option} {path}: {}",
                        crate::load::strerror(&error)
                    ),
                )
                .at(Some(Location::whole_file(path)))
                .with_help(when_failed(option)),
            ],
        },
    }
}

/// Reads `bytes`, the content of the GUID file `name` (used in locations) that option
/// `option` names, as OpenSM's `parse_node_map` does.
pub fn parse(option: &str, name: &str, bytes: &[u8]) -> GuidFile {
    let mut file = GuidFile {
        list: GuidList {
            guids: Vec::new(),
            complete: true,
        },
        diagnostics: Vec::new(),
    };
    let mut misread = 0;
    for piece in pieces(bytes) {
        if piece.split {
            let at = Location::in_source(name, bytes, piece.end, piece.end + 1);
            file.diagnostics.push(
                Diagnostic::warning(
                    Code::LineSplit,
                    format!(
                        "a line longer than {} bytes: OpenSM reads the rest of it as a line of \
                         its own",
                        LINE_BUFFER - 1
                    ),
                )
                .at(Some(at)),
            );
        }
        // The C string ends at its first NUL, whatever `fgets` read after it.
        let text = &bytes[piece.start..piece.end];
        let text = text.split(|&b| b == 0).next().unwrap_or_default();
        let first = text.iter().position(|&b| !is_c_space(b));
        let Some(first) = first.filter(|&at| text[at] != b'#') else {
            continue;
        };
        let number = cnum::scan(text, first);
        let after = text.get(number.end).copied();
        let at = |from: usize, to: usize| {
            Some(Location::in_source(
                name,
                bytes,
                piece.start + from,
                piece.start + to.max(from + 1),
            ))
        };
        if !number.digits || !after.is_none_or(|b| is_c_space(b) || b == b'#') {
            let end = text[first..]
                .iter()
                .position(|&b| is_c_space(b))
                .map_or(text.len(), |len| first + len);
            let word = String::from_utf8_lossy(&text[first..end]);
            file.diagnostics.push(
                Diagnostic::error(
                    Code::GuidFileStops,
                    format!(
                        "`{word}` is not a GUID: OpenSM stops reading {option} here, after {} \
                         GUID(s)",
                        file.list.guids.len()
                    ),
                )
                .at(at(first, end))
                .with_help(format!(
                    "a line is one GUID (0x... hex), then a space or `#` and any text; {}",
                    when_failed(option)
                )),
            );
            file.list.complete = false;
            break;
        }
        let guid = number.strtoul();
        let written = String::from_utf8_lossy(number.text(text));
        let surprise = if number.overflow {
            Some(format!(
                "`{written}` does not fit in 64 bits: OpenSM reads 0x{guid:016x}"
            ))
        } else if number.negative {
            Some(format!(
                "`{written}` is negative: OpenSM reads 0x{guid:016x}"
            ))
        } else {
            number.octal_surprise(text).map(|decimal| {
                format!("`{written}` is octal to OpenSM (a leading 0): 0x{guid:x}, not {decimal}")
            })
        };
        if let Some(message) = surprise
            && misread < MAX_PER_CODE
        {
            misread += 1;
            let d = Diagnostic::warning(Code::GuidMisread, message)
                .at(at(number.start, number.end))
                .with_help("write GUIDs in hex, with 0x");
            file.diagnostics.push(d);
        }
        file.list.guids.push(guid);
    }
    file
}

/// One `fgets` read: `bytes[start..end]`, and whether it ended in the middle of a line.
struct Piece {
    start: usize,
    end: usize,
    split: bool,
}

/// The reads `fgets(line, 256, f)` makes of `bytes`: up to and including a newline, at most
/// 255 bytes each.
fn pieces(bytes: &[u8]) -> impl Iterator<Item = Piece> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let limit = (start + LINE_BUFFER - 1).min(bytes.len());
        let (end, split) = match bytes[start..limit].iter().position(|&b| b == b'\n') {
            Some(newline) => (start + newline + 1, false),
            None => (limit, limit < bytes.len()),
        };
        let piece = Piece { start, end, split };
        start = end;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::located_codes;

    fn read(text: &str) -> GuidFile {
        parse("root_guid_file", "roots", text.as_bytes())
    }

    fn guids(file: &GuidFile) -> (&[u64], bool) {
        (&file.list.guids, file.list.complete)
    }

    #[test]
    fn comments_blank_lines_and_trailing_text_are_skipped() {
        let file = read("# roots\n\n  0x0002c90000000001 spine 1\n\t0x10#two\n7\r\n  # end\n");
        assert_eq!(guids(&file), (&[0x0002_c900_0000_0001, 0x10, 7][..], true));
        assert!(file.diagnostics.is_empty(), "{:?}", file.diagnostics);
    }

    /// The GUIDs before a bad line are read; the rest are not, and the file has failed.
    #[test]
    fn the_first_bad_line_stops_the_reading() {
        let file = read("0x1\n0x2g\n0x3\n");
        assert_eq!(guids(&file), (&[1][..], false));
        assert_eq!(
            located_codes(&file.diagnostics),
            [("guid-file-stops", 2, 1)]
        );
        assert!(
            file.diagnostics[0].message.contains("`0x2g` is not a GUID"),
            "{:?}",
            file.diagnostics
        );
        let file = read("0x1\n  spine-1\n");
        assert_eq!(guids(&file), (&[1][..], false));
        assert_eq!(
            located_codes(&file.diagnostics),
            [("guid-file-stops", 2, 3)]
        );
    }

    #[test]
    fn numbers_strtoull_reads_otherwise_are_warned_of() {
        let file = read("010\n-1\n0x1ffffffffffffffff\n");
        assert_eq!(guids(&file), (&[8, u64::MAX, u64::MAX][..], true));
        let found: Vec<&str> = file.diagnostics.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(found, ["guid-misread"; 3]);
        assert!(file.diagnostics[0].message.contains("octal"));
    }

    /// `fgets` reads 255 bytes at a time: the rest of a long line is a line of its own.
    #[test]
    fn a_long_line_is_read_in_pieces() {
        let line = format!("0x1 {}0x5\n", "x".repeat(251));
        let file = read(&line);
        assert_eq!(guids(&file), (&[1, 5][..], true));
        assert_eq!(located_codes(&file.diagnostics), [("line-split", 1, 256)]);
        let line = format!("0x1 {}nope\n", "x".repeat(251));
        assert!(!read(&line).list.complete);
    }

    /// A NUL ends the line as C sees it.
    #[test]
    fn a_nul_ends_the_line() {
        let file = parse("cn_guid_file", "cns", b"0x12\0junk\n\0x\n0x13\n");
        assert_eq!(guids(&file), (&[0x12, 0x13][..], true));
    }

    #[test]
    fn any_bytes_read_without_panic() {
        for bytes in [
            &b""[..],
            b"\xff\xfe",
            b"0x",
            b"-",
            b"0",
            b"\n\n#",
            b"0x\xff",
        ] {
            parse("io_guid_file", "ios", bytes);
        }
    }

    #[test]
    fn a_file_that_cannot_be_read_has_failed() {
        let file = load("cn_guid_file", "/nonexistent/cns");
        assert_eq!(guids(&file), (&[][..], false));
        let message = &file.diagnostics[0].message;
        assert_eq!(
            message,
            "cannot read cn_guid_file /nonexistent/cns: No such file or directory"
        );
    }
}
