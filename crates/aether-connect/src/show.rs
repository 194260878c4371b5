//! Text renderings of query results for Spark Connect's `ShowString` and `HtmlString`
//! relations.
//!
//! PySpark's `DataFrame.show()` and the notebook eager-evaluation hook ask the server for a
//! ready-made string, and doctests compare that string byte for byte. This module therefore
//! reproduces Spark 4's `Dataset.showString` / `Dataset.htmlString` exactly: the pretty cast
//! of every value to text (`NULL`, Java's float formatting, `[a, b]`, `{k -> v}`, `{f1, f2}`,
//! timestamps in the session time zone, ...), the escaping of control characters, truncation
//! measured in UTF-16 code units, column widths that count East Asian full-width characters as
//! two, and the ASCII-table, vertical and HTML layouts with their footers.

use std::fmt::Write as _;

use arrow::array::temporal_conversions::as_datetime_with_timezone;
use arrow::array::timezone::Tz;
use arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    FixedSizeListArray, LargeBinaryArray, LargeListArray, LargeStringArray, ListArray, MapArray,
    PrimitiveArray, StringArray, StringViewArray, StructArray,
};
use arrow::compute::cast;
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Date64Type, Decimal32Type, Decimal64Type,
    Decimal128Type, Decimal256Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float16Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, IntervalUnit, IntervalYearMonthType, Schema,
    Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// Options of one show() call.
#[derive(Debug, Clone)]
pub struct ShowOptions {
    /// Number of rows to print; one more row tells that the footer is needed.
    pub num_rows: usize,
    /// Maximum cell length (0: no truncation and left-aligned cells).
    pub truncate: usize,
    /// Print one `-RECORD n-` block per row instead of a table.
    pub vertical: bool,
    /// Session time zone, e.g. "UTC" or "America/Los_Angeles".
    pub time_zone: String,
}

/// Spark's ASCII table (or vertical form) of the rows in `batches`. The caller passes at most
/// num_rows + 1 rows; if there are more than num_rows, only num_rows are printed and the footer
/// "only showing top N rows" (or "row" when N == 1) is added, as Spark does.
pub fn show_string(
    schema: &Schema,
    batches: &[RecordBatch],
    options: &ShowOptions,
) -> Result<String, ArrowError> {
    let table = Table::collect(schema, batches, options)?;
    let mut out = if options.vertical {
        table.render_vertical()
    } else {
        table.render_grid(options.truncate > 0)
    };
    // Unlike the table lines, Spark ends these footers without a newline.
    if options.vertical && table.rows.is_empty() {
        out.push_str("(0 rows)");
    } else if let Some(footer) = table.footer() {
        out.push_str(&footer);
    }
    Ok(out)
}

/// Spark's HTML table (htmlString, used by notebooks' eager evaluation), same row rules.
pub fn html_string(
    schema: &Schema,
    batches: &[RecordBatch],
    options: &ShowOptions,
) -> Result<String, ArrowError> {
    let table = Table::collect(schema, batches, options)?;
    let mut out = table.render_html();
    if let Some(footer) = table.footer() {
        out.push_str(&footer);
        out.push('\n');
    }
    Ok(out)
}

/// Narrowest column Spark prints.
const MIN_COLUMN_WIDTH: usize = 3;

/// Header and cells as final text (escaped and truncated), ready for layout.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    num_rows: usize,
    has_more: bool,
}

impl Table {
    fn collect(
        schema: &Schema,
        batches: &[RecordBatch],
        options: &ShowOptions,
    ) -> Result<Self, ArrowError> {
        let header = schema
            .fields()
            .iter()
            .map(|field| escape_meta_characters(field.name()))
            .collect();
        let context = ValueContext::new(&options.time_zone);
        let limit = options.num_rows.saturating_add(1);
        let mut rows = Vec::new();
        for batch in batches {
            check_columns(schema, batch)?;
            let wanted = batch.num_rows().min(limit - rows.len());
            for row in 0..wanted {
                rows.push(format_row(schema, batch, row, &context, options.truncate)?);
            }
            if rows.len() == limit {
                break;
            }
        }
        let has_more = rows.len() > options.num_rows;
        rows.truncate(options.num_rows);
        Ok(Self {
            header,
            rows,
            num_rows: options.num_rows,
            has_more,
        })
    }

    /// "only showing top N rows" when rows were left out.
    fn footer(&self) -> Option<String> {
        let noun = if self.num_rows == 1 { "row" } else { "rows" };
        self.has_more
            .then(|| format!("only showing top {} {noun}", self.num_rows))
    }

    /// The ASCII table; cells are right-aligned when truncating, left-aligned otherwise.
    fn render_grid(&self, right_align: bool) -> String {
        let widths = self.column_widths();
        let separator = join_wrapped(widths.iter().map(|w| "-".repeat(*w)), "+", "+", "+\n");
        let mut out = separator.clone();
        out.push_str(&grid_line(&self.header, &widths, right_align));
        out.push_str(&separator);
        for row in &self.rows {
            out.push_str(&grid_line(row, &widths, right_align));
        }
        out.push_str(&separator);
        out
    }

    fn column_widths(&self) -> Vec<usize> {
        let mut widths = vec![MIN_COLUMN_WIDTH; self.header.len()];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(half_width(cell));
            }
        }
        widths
    }

    /// One `-RECORD i-` block per row, field names and values left-aligned.
    fn render_vertical(&self) -> String {
        let name_width = max_width(self.header.iter());
        let data_width = max_width(self.rows.iter().flatten());
        let mut out = String::new();
        for (index, row) in self.rows.iter().enumerate() {
            let title = format!("-RECORD {index}");
            let dashes = (name_width + data_width + 5).saturating_sub(utf16_len(&title));
            out.push_str(&title);
            out.push_str(&"-".repeat(dashes));
            out.push('\n');
            let lines = self.header.iter().zip(row).map(|(name, cell)| {
                format!(
                    " {} | {} ",
                    pad(name, name_width, false),
                    pad(cell, data_width, false)
                )
            });
            out.push_str(&join_wrapped(lines, "", "\n", "\n"));
        }
        out
    }

    fn render_html(&self) -> String {
        let mut out = String::from("<table border='1'>\n");
        let header = self.header.iter().map(|cell| escape_html(cell));
        out.push_str(&join_wrapped(
            header,
            "<tr><th>",
            "</th><th>",
            "</th></tr>\n",
        ));
        for row in &self.rows {
            let cells = row.iter().map(|cell| escape_html(cell));
            out.push_str(&join_wrapped(
                cells,
                "<tr><td>",
                "</td><td>",
                "</td></tr>\n",
            ));
        }
        out.push_str("</table>\n");
        out
    }
}

fn check_columns(schema: &Schema, batch: &RecordBatch) -> Result<(), ArrowError> {
    if batch.num_columns() < schema.fields().len() {
        return Err(ArrowError::SchemaError(format!(
            "show: batch has {} columns but the schema has {}",
            batch.num_columns(),
            schema.fields().len()
        )));
    }
    Ok(())
}

fn format_row(
    schema: &Schema,
    batch: &RecordBatch,
    row: usize,
    context: &ValueContext,
    truncate: usize,
) -> Result<Vec<String>, ArrowError> {
    batch.columns()[..schema.fields().len()]
        .iter()
        .map(|column| {
            let mut text = String::new();
            write_value(column.as_ref(), row, context, &mut text)?;
            Ok(truncate_cell(&escape_meta_characters(&text), truncate))
        })
        .collect()
}

fn grid_line(cells: &[String], widths: &[usize], right_align: bool) -> String {
    let padded = cells
        .iter()
        .zip(widths)
        .map(|(cell, width)| pad(cell, *width, right_align));
    join_wrapped(padded, "|", "|", "|\n")
}

/// `start` + items joined by `separator` + `end` (also for no items).
fn join_wrapped(
    items: impl Iterator<Item = String>,
    start: &str,
    separator: &str,
    end: &str,
) -> String {
    let mut out = String::from(start);
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.push_str(separator);
        }
        out.push_str(&item);
    }
    out.push_str(end);
    out
}

fn max_width<'a>(cells: impl Iterator<Item = &'a String>) -> usize {
    cells
        .map(|cell| half_width(cell))
        .fold(MIN_COLUMN_WIDTH, usize::max)
}

/// Pads `cell` with spaces to `width` display columns.
fn pad(cell: &str, width: usize, right_align: bool) -> String {
    let spaces = " ".repeat(width.saturating_sub(half_width(cell)));
    if right_align {
        spaces + cell
    } else {
        format!("{cell}{spaces}")
    }
}

// ---------------------------------------------------------------------------------------------
// Cell text: escaping, truncation and width
// ---------------------------------------------------------------------------------------------

/// Makes control characters visible so that they cannot break the table.
fn escape_meta_characters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{c}' => out.push_str("\\f"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{7}' => out.push_str("\\a"),
            _ => out.push(ch),
        }
    }
    out
}

/// Cuts cells longer than `truncate` UTF-16 code units, ending them with "..." when there is
/// room for it.
fn truncate_cell(text: &str, truncate: usize) -> String {
    if truncate == 0 || utf16_len(text) <= truncate {
        return text.to_owned();
    }
    if truncate < 4 {
        return utf16_prefix(text, truncate);
    }
    utf16_prefix(text, truncate - 3) + "..."
}

/// The first `units` UTF-16 code units of `text`; half a surrogate pair becomes '?', as it
/// does when a Java string cut inside a pair is encoded.
fn utf16_prefix(text: &str, units: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let len = ch.len_utf16();
        if used + len > units {
            if used < units {
                out.push('?');
            }
            break;
        }
        out.push(ch);
        used += len;
    }
    out
}

fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// Display width: UTF-16 length plus one for each East Asian full-width character.
fn half_width(text: &str) -> usize {
    text.chars()
        .map(|ch| ch.len_utf16() + usize::from(is_full_width(ch)))
        .sum()
}

fn is_full_width(ch: char) -> bool {
    matches!(
        ch,
        '\u{1100}'..='\u{115F}'
            | '\u{2E80}'..='\u{A4CF}'
            | '\u{AC00}'..='\u{D7A3}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{FE10}'..='\u{FE19}'
            | '\u{FE30}'..='\u{FE6F}'
            | '\u{FF00}'..='\u{FF60}'
            | '\u{FFE0}'..='\u{FFE6}'
    )
}

/// HTML 4 escaping: the markup characters and every character with a named HTML 4 entity.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match HTML4_ENTITIES.binary_search_by_key(&u32::from(ch), |(code, _)| *code) {
            Ok(index) => {
                out.push('&');
                out.push_str(HTML4_ENTITIES[index].1);
                out.push(';');
            }
            Err(_) => out.push(ch),
        }
    }
    out
}

/// The named character entities of HTML 4.01, sorted by code point.
#[rustfmt::skip]
const HTML4_ENTITIES: &[(u32, &str)] = &[
    (0x0022, "quot"), (0x0026, "amp"), (0x003C, "lt"), (0x003E, "gt"), (0x00A0, "nbsp"),
    (0x00A1, "iexcl"), (0x00A2, "cent"), (0x00A3, "pound"), (0x00A4, "curren"), (0x00A5, "yen"),
    (0x00A6, "brvbar"), (0x00A7, "sect"), (0x00A8, "uml"), (0x00A9, "copy"), (0x00AA, "ordf"),
    (0x00AB, "laquo"), (0x00AC, "not"), (0x00AD, "shy"), (0x00AE, "reg"), (0x00AF, "macr"),
    (0x00B0, "deg"), (0x00B1, "plusmn"), (0x00B2, "sup2"), (0x00B3, "sup3"), (0x00B4, "acute"),
    (0x00B5, "micro"), (0x00B6, "para"), (0x00B7, "middot"), (0x00B8, "cedil"), (0x00B9, "sup1"),
    (0x00BA, "ordm"), (0x00BB, "raquo"), (0x00BC, "frac14"), (0x00BD, "frac12"),
    (0x00BE, "frac34"), (0x00BF, "iquest"), (0x00C0, "Agrave"), (0x00C1, "Aacute"),
    (0x00C2, "Acirc"), (0x00C3, "Atilde"), (0x00C4, "Auml"), (0x00C5, "Aring"), (0x00C6, "AElig"),
    (0x00C7, "Ccedil"), (0x00C8, "Egrave"), (0x00C9, "Eacute"), (0x00CA, "Ecirc"),
    (0x00CB, "Euml"), (0x00CC, "Igrave"), (0x00CD, "Iacute"), (0x00CE, "Icirc"), (0x00CF, "Iuml"),
    (0x00D0, "ETH"), (0x00D1, "Ntilde"), (0x00D2, "Ograve"), (0x00D3, "Oacute"), (0x00D4, "Ocirc"),
    (0x00D5, "Otilde"), (0x00D6, "Ouml"), (0x00D7, "times"), (0x00D8, "Oslash"),
    (0x00D9, "Ugrave"), (0x00DA, "Uacute"), (0x00DB, "Ucirc"), (0x00DC, "Uuml"),
    (0x00DD, "Yacute"), (0x00DE, "THORN"), (0x00DF, "szlig"), (0x00E0, "agrave"),
    (0x00E1, "aacute"), (0x00E2, "acirc"), (0x00E3, "atilde"), (0x00E4, "auml"), (0x00E5, "aring"),
    (0x00E6, "aelig"), (0x00E7, "ccedil"), (0x00E8, "egrave"), (0x00E9, "eacute"),
    (0x00EA, "ecirc"), (0x00EB, "euml"), (0x00EC, "igrave"), (0x00ED, "iacute"), (0x00EE, "icirc"),
    (0x00EF, "iuml"), (0x00F0, "eth"), (0x00F1, "ntilde"), (0x00F2, "ograve"), (0x00F3, "oacute"),
    (0x00F4, "ocirc"), (0x00F5, "otilde"), (0x00F6, "ouml"), (0x00F7, "divide"),
    (0x00F8, "oslash"), (0x00F9, "ugrave"), (0x00FA, "uacute"), (0x00FB, "ucirc"),
    (0x00FC, "uuml"), (0x00FD, "yacute"), (0x00FE, "thorn"), (0x00FF, "yuml"), (0x0152, "OElig"),
    (0x0153, "oelig"), (0x0160, "Scaron"), (0x0161, "scaron"), (0x0178, "Yuml"), (0x0192, "fnof"),
    (0x02C6, "circ"), (0x02DC, "tilde"), (0x0391, "Alpha"), (0x0392, "Beta"), (0x0393, "Gamma"),
    (0x0394, "Delta"), (0x0395, "Epsilon"), (0x0396, "Zeta"), (0x0397, "Eta"), (0x0398, "Theta"),
    (0x0399, "Iota"), (0x039A, "Kappa"), (0x039B, "Lambda"), (0x039C, "Mu"), (0x039D, "Nu"),
    (0x039E, "Xi"), (0x039F, "Omicron"), (0x03A0, "Pi"), (0x03A1, "Rho"), (0x03A3, "Sigma"),
    (0x03A4, "Tau"), (0x03A5, "Upsilon"), (0x03A6, "Phi"), (0x03A7, "Chi"), (0x03A8, "Psi"),
    (0x03A9, "Omega"), (0x03B1, "alpha"), (0x03B2, "beta"), (0x03B3, "gamma"), (0x03B4, "delta"),
    (0x03B5, "epsilon"), (0x03B6, "zeta"), (0x03B7, "eta"), (0x03B8, "theta"), (0x03B9, "iota"),
    (0x03BA, "kappa"), (0x03BB, "lambda"), (0x03BC, "mu"), (0x03BD, "nu"), (0x03BE, "xi"),
    (0x03BF, "omicron"), (0x03C0, "pi"), (0x03C1, "rho"), (0x03C2, "sigmaf"), (0x03C3, "sigma"),
    (0x03C4, "tau"), (0x03C5, "upsilon"), (0x03C6, "phi"), (0x03C7, "chi"), (0x03C8, "psi"),
    (0x03C9, "omega"), (0x03D1, "thetasym"), (0x03D2, "upsih"), (0x03D6, "piv"), (0x2002, "ensp"),
    (0x2003, "emsp"), (0x2009, "thinsp"), (0x200C, "zwnj"), (0x200D, "zwj"), (0x200E, "lrm"),
    (0x200F, "rlm"), (0x2013, "ndash"), (0x2014, "mdash"), (0x2018, "lsquo"), (0x2019, "rsquo"),
    (0x201A, "sbquo"), (0x201C, "ldquo"), (0x201D, "rdquo"), (0x201E, "bdquo"), (0x2020, "dagger"),
    (0x2021, "Dagger"), (0x2022, "bull"), (0x2026, "hellip"), (0x2030, "permil"),
    (0x2032, "prime"), (0x2033, "Prime"), (0x2039, "lsaquo"), (0x203A, "rsaquo"),
    (0x203E, "oline"), (0x2044, "frasl"), (0x20AC, "euro"), (0x2111, "image"), (0x2118, "weierp"),
    (0x211C, "real"), (0x2122, "trade"), (0x2135, "alefsym"), (0x2190, "larr"), (0x2191, "uarr"),
    (0x2192, "rarr"), (0x2193, "darr"), (0x2194, "harr"), (0x21B5, "crarr"), (0x21D0, "lArr"),
    (0x21D1, "uArr"), (0x21D2, "rArr"), (0x21D3, "dArr"), (0x21D4, "hArr"), (0x2200, "forall"),
    (0x2202, "part"), (0x2203, "exist"), (0x2205, "empty"), (0x2207, "nabla"), (0x2208, "isin"),
    (0x2209, "notin"), (0x220B, "ni"), (0x220F, "prod"), (0x2211, "sum"), (0x2212, "minus"),
    (0x2217, "lowast"), (0x221A, "radic"), (0x221D, "prop"), (0x221E, "infin"), (0x2220, "ang"),
    (0x2227, "and"), (0x2228, "or"), (0x2229, "cap"), (0x222A, "cup"), (0x222B, "int"),
    (0x2234, "there4"), (0x223C, "sim"), (0x2245, "cong"), (0x2248, "asymp"), (0x2260, "ne"),
    (0x2261, "equiv"), (0x2264, "le"), (0x2265, "ge"), (0x2282, "sub"), (0x2283, "sup"),
    (0x2284, "nsub"), (0x2286, "sube"), (0x2287, "supe"), (0x2295, "oplus"), (0x2297, "otimes"),
    (0x22A5, "perp"), (0x22C5, "sdot"), (0x2308, "lceil"), (0x2309, "rceil"), (0x230A, "lfloor"),
    (0x230B, "rfloor"), (0x2329, "lang"), (0x232A, "rang"), (0x25CA, "loz"), (0x2660, "spades"),
    (0x2663, "clubs"), (0x2665, "hearts"), (0x2666, "diams"),
];

// ---------------------------------------------------------------------------------------------
// Values to text
// ---------------------------------------------------------------------------------------------

/// What formatting a value needs besides the value: the session time zone.
struct ValueContext {
    time_zone: Result<Tz, String>,
}

impl ValueContext {
    fn new(time_zone: &str) -> Self {
        let parsed = parse_time_zone(time_zone)
            .ok_or_else(|| format!("show: unsupported session time zone '{time_zone}'"));
        Self { time_zone: parsed }
    }

    /// Shifts an instant (microseconds since the epoch) to the session's wall-clock time.
    fn to_local(&self, utc_micros: i128) -> Result<i128, ArrowError> {
        let tz = self
            .time_zone
            .as_ref()
            .map_err(|message| ArrowError::InvalidArgumentError(message.clone()))?;
        let seconds = utc_micros.div_euclid(MICROS_PER_SECOND);
        let offset = i64::try_from(seconds)
            .ok()
            .and_then(|seconds| {
                let local = as_datetime_with_timezone::<TimestampSecondType>(seconds, *tz)?;
                Some(local.naive_local().and_utc().timestamp() - seconds)
            })
            .unwrap_or(0);
        Ok(utc_micros + i128::from(offset) * MICROS_PER_SECOND)
    }
}

/// Parses a Spark session time zone: region ids ("America/Los_Angeles", "UTC") and offsets
/// ("+08:00", "-0530", "GMT+8", "UTC-05:00", "Z").
fn parse_time_zone(id: &str) -> Option<Tz> {
    let id = id.trim();
    if let Ok(tz) = id.parse::<Tz>() {
        return Some(tz);
    }
    let offset = ["GMT", "UTC", "UT"]
        .iter()
        .find_map(|prefix| id.strip_prefix(prefix))
        .unwrap_or(id);
    if offset.is_empty() || offset == "Z" {
        return "+00:00".parse().ok();
    }
    normalize_offset(offset)?.parse().ok()
}

/// Rewrites "+8", "+08", "+8:30", "+0830" or "+08:30" as "+08:30".
fn normalize_offset(offset: &str) -> Option<String> {
    let sign = offset.chars().next().filter(|c| *c == '+' || *c == '-')?;
    let rest = &offset[1..];
    let (hours, minutes) = match rest.split_once(':') {
        Some((hours, minutes)) => (hours, minutes),
        None if rest.len() > 2 => rest.split_at(rest.len() - 2),
        None => (rest, "0"),
    };
    let hours: u32 = hours.parse().ok()?;
    let minutes: u32 = minutes.parse().ok()?;
    (hours <= 18 && minutes < 60).then(|| format!("{sign}{hours:02}:{minutes:02}"))
}

const MICROS_PER_SECOND: i128 = 1_000_000;
const MICROS_PER_DAY: i128 = 86_400 * MICROS_PER_SECOND;
const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_DAY: i128 = MICROS_PER_DAY * 1000;

fn downcast<T: 'static>(array: &dyn Array) -> Result<&T, ArrowError> {
    array.as_any().downcast_ref::<T>().ok_or_else(|| {
        ArrowError::CastError(format!(
            "show: unexpected array for type {}",
            array.data_type()
        ))
    })
}

fn primitive<T: ArrowPrimitiveType>(
    array: &dyn Array,
    row: usize,
) -> Result<T::Native, ArrowError> {
    Ok(downcast::<PrimitiveArray<T>>(array)?.value(row))
}

/// Appends Spark's pretty string of `array[row]` (the text `show()` prints) to `out`.
fn write_value(
    array: &dyn Array,
    row: usize,
    context: &ValueContext,
    out: &mut String,
) -> Result<(), ArrowError> {
    if array.is_null(row) {
        out.push_str("NULL");
        return Ok(());
    }
    match array.data_type() {
        DataType::Null => out.push_str("NULL"),
        DataType::Boolean => {
            let value = downcast::<BooleanArray>(array)?.value(row);
            out.push_str(if value { "true" } else { "false" });
        }
        DataType::Float16 => {
            let value = primitive::<Float16Type>(array, row)?.to_f32();
            out.push_str(&java_float_string(value));
        }
        DataType::Float32 => {
            out.push_str(&java_float_string(primitive::<Float32Type>(array, row)?));
        }
        DataType::Float64 => {
            out.push_str(&java_double_string(primitive::<Float64Type>(array, row)?));
        }
        DataType::Utf8 => out.push_str(downcast::<StringArray>(array)?.value(row)),
        DataType::LargeUtf8 => out.push_str(downcast::<LargeStringArray>(array)?.value(row)),
        DataType::Utf8View => out.push_str(downcast::<StringViewArray>(array)?.value(row)),
        DataType::Binary => write_binary(downcast::<BinaryArray>(array)?.value(row), out),
        DataType::LargeBinary => {
            write_binary(downcast::<LargeBinaryArray>(array)?.value(row), out);
        }
        DataType::BinaryView => {
            write_binary(downcast::<BinaryViewArray>(array)?.value(row), out);
        }
        DataType::FixedSizeBinary(_) => {
            write_binary(downcast::<FixedSizeBinaryArray>(array)?.value(row), out);
        }
        DataType::List(_) => {
            let values = downcast::<ListArray>(array)?.value(row);
            write_list(values.as_ref(), context, out)?;
        }
        DataType::LargeList(_) => {
            let values = downcast::<LargeListArray>(array)?.value(row);
            write_list(values.as_ref(), context, out)?;
        }
        DataType::FixedSizeList(_, _) => {
            let values = downcast::<FixedSizeListArray>(array)?.value(row);
            write_list(values.as_ref(), context, out)?;
        }
        DataType::Map(_, _) => write_map(downcast::<MapArray>(array)?, row, context, out)?,
        DataType::Struct(_) => {
            write_struct(downcast::<StructArray>(array)?, row, context, out)?;
        }
        DataType::Dictionary(_, value_type) => {
            write_decoded(array, row, value_type, context, out)?;
        }
        DataType::RunEndEncoded(_, values) => {
            write_decoded(array, row, values.data_type(), context, out)?;
        }
        data_type => write_scalar(array, data_type, row, context, out)?,
    }
    Ok(())
}

/// Numbers and temporal values.
fn write_scalar(
    array: &dyn Array,
    data_type: &DataType,
    row: usize,
    context: &ValueContext,
    out: &mut String,
) -> Result<(), ArrowError> {
    match data_type {
        DataType::Int8 => write_display(primitive::<Int8Type>(array, row)?, out),
        DataType::Int16 => write_display(primitive::<Int16Type>(array, row)?, out),
        DataType::Int32 => write_display(primitive::<Int32Type>(array, row)?, out),
        DataType::Int64 => write_display(primitive::<Int64Type>(array, row)?, out),
        DataType::UInt8 => write_display(primitive::<UInt8Type>(array, row)?, out),
        DataType::UInt16 => write_display(primitive::<UInt16Type>(array, row)?, out),
        DataType::UInt32 => write_display(primitive::<UInt32Type>(array, row)?, out),
        DataType::UInt64 => write_display(primitive::<UInt64Type>(array, row)?, out),
        DataType::Decimal32(_, scale) => {
            write_decimal(
                &primitive::<Decimal32Type>(array, row)?.to_string(),
                *scale,
                out,
            );
        }
        DataType::Decimal64(_, scale) => {
            write_decimal(
                &primitive::<Decimal64Type>(array, row)?.to_string(),
                *scale,
                out,
            );
        }
        DataType::Decimal128(_, scale) => {
            write_decimal(
                &primitive::<Decimal128Type>(array, row)?.to_string(),
                *scale,
                out,
            );
        }
        DataType::Decimal256(_, scale) => {
            write_decimal(
                &primitive::<Decimal256Type>(array, row)?.to_string(),
                *scale,
                out,
            );
        }
        DataType::Date32 => {
            write_date(i128::from(primitive::<Date32Type>(array, row)?), out);
        }
        DataType::Date64 => {
            let millis = i128::from(primitive::<Date64Type>(array, row)?);
            write_date(millis.div_euclid(86_400_000), out);
        }
        DataType::Timestamp(unit, zone) => {
            let micros = timestamp_micros(array, *unit, row)?;
            let local = if zone.is_some() {
                context.to_local(micros)?
            } else {
                micros
            };
            write_timestamp(local, out);
        }
        DataType::Time32(_) | DataType::Time64(_) => write_time(time_nanos(array, row)?, out),
        DataType::Duration(unit) => {
            write_day_time_interval(duration_micros(array, *unit, row)?, out)
        }
        DataType::Interval(IntervalUnit::YearMonth) => {
            write_year_month_interval(primitive::<IntervalYearMonthType>(array, row)?, out);
        }
        _ => write_fallback(array, row, out)?,
    }
    Ok(())
}

fn write_display(value: impl std::fmt::Display, out: &mut String) {
    // Writing to a String cannot fail.
    let _ = write!(out, "{value}");
}

/// Types Spark has no counterpart for: Arrow's own display.
fn write_fallback(array: &dyn Array, row: usize, out: &mut String) -> Result<(), ArrowError> {
    let options = FormatOptions::default().with_null("NULL");
    let formatter = ArrayFormatter::try_new(array, &options)?;
    write_display(formatter.value(row), out);
    Ok(())
}

/// Dictionary and run-end encoded values: decode the one row, then format it.
fn write_decoded(
    array: &dyn Array,
    row: usize,
    value_type: &DataType,
    context: &ValueContext,
    out: &mut String,
) -> Result<(), ArrowError> {
    let decoded = cast(&array.slice(row, 1), value_type)?;
    write_value(decoded.as_ref(), 0, context, out)
}

/// `[a, b, NULL]`
fn write_list(
    values: &dyn Array,
    context: &ValueContext,
    out: &mut String,
) -> Result<(), ArrowError> {
    out.push('[');
    for index in 0..values.len() {
        if index > 0 {
            out.push_str(", ");
        }
        write_value(values, index, context, out)?;
    }
    out.push(']');
    Ok(())
}

/// `{k1 -> v1, k2 -> NULL}`
fn write_map(
    map: &MapArray,
    row: usize,
    context: &ValueContext,
    out: &mut String,
) -> Result<(), ArrowError> {
    let entries = map.value(row);
    let keys: &ArrayRef = entries.column(0);
    let values: &ArrayRef = entries.column(1);
    out.push('{');
    for index in 0..entries.len() {
        if index > 0 {
            out.push_str(", ");
        }
        write_value(keys.as_ref(), index, context, out)?;
        out.push_str(" -> ");
        write_value(values.as_ref(), index, context, out)?;
    }
    out.push('}');
    Ok(())
}

/// `{field1, field2}`
fn write_struct(
    array: &StructArray,
    row: usize,
    context: &ValueContext,
    out: &mut String,
) -> Result<(), ArrowError> {
    out.push('{');
    for (index, column) in array.columns().iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        write_value(column.as_ref(), row, context, out)?;
    }
    out.push('}');
    Ok(())
}

/// `[01 02 FF]`
fn write_binary(bytes: &[u8], out: &mut String) {
    out.push('[');
    for (index, byte) in bytes.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{byte:02X}");
    }
    out.push(']');
}

/// A decimal's unscaled integer (as text) printed with exactly `scale` fraction digits.
fn write_decimal(unscaled: &str, scale: i8, out: &mut String) {
    let (negative, digits) = match unscaled.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, unscaled),
    };
    if negative {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(digits);
        if digits != "0" {
            out.push_str(&"0".repeat(usize::from(scale.unsigned_abs())));
        }
        return;
    }
    let scale = usize::from(scale.unsigned_abs());
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (integer, fraction) = padded.split_at(padded.len() - scale);
    out.push_str(integer);
    out.push('.');
    out.push_str(fraction);
}

fn timestamp_micros(array: &dyn Array, unit: TimeUnit, row: usize) -> Result<i128, ArrowError> {
    Ok(match unit {
        TimeUnit::Second => {
            i128::from(primitive::<TimestampSecondType>(array, row)?) * MICROS_PER_SECOND
        }
        TimeUnit::Millisecond => {
            i128::from(primitive::<TimestampMillisecondType>(array, row)?) * 1000
        }
        TimeUnit::Microsecond => i128::from(primitive::<TimestampMicrosecondType>(array, row)?),
        TimeUnit::Nanosecond => {
            i128::from(primitive::<TimestampNanosecondType>(array, row)?).div_euclid(1000)
        }
    })
}

fn duration_micros(array: &dyn Array, unit: TimeUnit, row: usize) -> Result<i128, ArrowError> {
    Ok(match unit {
        TimeUnit::Second => {
            i128::from(primitive::<DurationSecondType>(array, row)?) * MICROS_PER_SECOND
        }
        TimeUnit::Millisecond => {
            i128::from(primitive::<DurationMillisecondType>(array, row)?) * 1000
        }
        TimeUnit::Microsecond => i128::from(primitive::<DurationMicrosecondType>(array, row)?),
        TimeUnit::Nanosecond => {
            i128::from(primitive::<DurationNanosecondType>(array, row)?).div_euclid(1000)
        }
    })
}

/// Nanoseconds since midnight of a Time32 / Time64 value.
fn time_nanos(array: &dyn Array, row: usize) -> Result<i128, ArrowError> {
    Ok(match array.data_type() {
        DataType::Time32(TimeUnit::Second) => {
            i128::from(primitive::<Time32SecondType>(array, row)?) * NANOS_PER_SECOND
        }
        DataType::Time32(_) => {
            i128::from(primitive::<Time32MillisecondType>(array, row)?) * 1_000_000
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            i128::from(primitive::<Time64MicrosecondType>(array, row)?) * 1000
        }
        _ => i128::from(primitive::<Time64NanosecondType>(array, row)?),
    })
}

/// `yyyy-MM-dd` of days since 1970-01-01 (proleptic Gregorian); years beyond 9999 get a '+'.
fn write_date(days: i128, out: &mut String) {
    let (year, month, day) = civil_from_days(days);
    if year < 0 {
        let _ = write!(out, "-{:04}", -year);
    } else if year > 9999 {
        let _ = write!(out, "+{year}");
    } else {
        let _ = write!(out, "{year:04}");
    }
    let _ = write!(out, "-{month:02}-{day:02}");
}

/// Year, month and day of a day count since 1970-01-01.
fn civil_from_days(days: i128) -> (i128, i128, i128) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

/// `yyyy-MM-dd HH:mm:ss[.fraction]` of a wall-clock time in microseconds since the epoch.
fn write_timestamp(micros: i128, out: &mut String) {
    write_date(micros.div_euclid(MICROS_PER_DAY), out);
    out.push(' ');
    write_clock(micros.rem_euclid(MICROS_PER_DAY) * 1000, out);
}

/// `HH:mm:ss` plus the fraction of a second without trailing zeros.
fn write_clock(nanos: i128, out: &mut String) {
    let seconds = nanos / NANOS_PER_SECOND;
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    let fraction = nanos % NANOS_PER_SECOND;
    if fraction > 0 {
        let digits = format!("{fraction:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

fn write_time(nanos: i128, out: &mut String) {
    write_clock(nanos.rem_euclid(NANOS_PER_DAY), out);
}

/// `INTERVAL '-1 02:03:04.5' DAY TO SECOND`
fn write_day_time_interval(micros: i128, out: &mut String) {
    let sign = if micros < 0 { "-" } else { "" };
    let magnitude = micros.abs();
    let _ = write!(out, "INTERVAL '{sign}{} ", magnitude / MICROS_PER_DAY);
    write_clock(magnitude % MICROS_PER_DAY * 1000, out);
    out.push_str("' DAY TO SECOND");
}

/// `INTERVAL '-1-2' YEAR TO MONTH`
fn write_year_month_interval(months: i32, out: &mut String) {
    let sign = if months < 0 { "-" } else { "" };
    let magnitude = i64::from(months).abs();
    let _ = write!(
        out,
        "INTERVAL '{sign}{}-{}' YEAR TO MONTH",
        magnitude / 12,
        magnitude % 12
    );
}

// ---------------------------------------------------------------------------------------------
// Java's Double.toString / Float.toString
// ---------------------------------------------------------------------------------------------

/// `Double.toString`: shortest digits that read back as `value`, plain notation for
/// 1e-3 <= |value| < 1e7 and computerized scientific notation otherwise.
fn java_double_string(value: f64) -> String {
    if let Some(text) = special_float(value.is_nan(), value.is_infinite(), value == 0.0, value) {
        return text.to_owned();
    }
    let magnitude = value.abs();
    let digits = java_digits(&format!("{magnitude:e}"), |significant| {
        let closest = format!("{magnitude:.*e}", significant - 1);
        (closest.parse::<f64>().ok() == Some(magnitude)).then_some(closest)
    });
    java_layout(value.is_sign_negative(), &digits)
}

/// `Float.toString`, same rules at single precision.
fn java_float_string(value: f32) -> String {
    let wide = f64::from(value);
    if let Some(text) = special_float(value.is_nan(), value.is_infinite(), value == 0.0, wide) {
        return text.to_owned();
    }
    let magnitude = value.abs();
    let digits = java_digits(&format!("{magnitude:e}"), |significant| {
        let closest = format!("{magnitude:.*e}", significant - 1);
        (closest.parse::<f32>().ok() == Some(magnitude)).then_some(closest)
    });
    java_layout(value.is_sign_negative(), &digits)
}

fn special_float(nan: bool, infinite: bool, zero: bool, value: f64) -> Option<&'static str> {
    let negative = value.is_sign_negative();
    match (nan, infinite, zero) {
        (true, _, _) => Some("NaN"),
        (_, true, _) => Some(if negative { "-Infinity" } else { "Infinity" }),
        (_, _, true) => Some(if negative { "-0.0" } else { "0.0" }),
        _ => None,
    }
}

/// Significant digits (no trailing zeros) and the exponent of the first one.
#[derive(Debug, PartialEq)]
struct Digits {
    digits: String,
    exponent: i32,
}

/// Java prints the decimal closest to the value (ties to an even last digit) among those of
/// the shortest length that read back as the value, where a single digit counts as length two
/// (`4.9E-324`, not `5.0E-324`). `shortest` is Rust's shortest round-trip form, whose length is
/// right but whose last digit may lose a tie or a two-digit alternative; `closest(n)` is the
/// correctly rounded n-digit form of the value if that reads back as the value.
fn java_digits(shortest: &str, closest: impl Fn(usize) -> Option<String>) -> Digits {
    let best = parse_scientific(shortest);
    match closest(best.digits.len().max(2)) {
        Some(text) => parse_scientific(&text),
        None => best,
    }
}

/// Splits Rust's `{:e}` output ("1.25e-7") into digits and exponent.
fn parse_scientific(text: &str) -> Digits {
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let trimmed = digits.trim_end_matches('0');
    Digits {
        digits: if trimmed.is_empty() { "0" } else { trimmed }.to_owned(),
        exponent: exponent.parse().unwrap_or(0),
    }
}

fn java_layout(negative: bool, digits: &Digits) -> String {
    let mut out = String::from(if negative { "-" } else { "" });
    let Digits { digits, exponent } = digits;
    match usize::try_from(*exponent) {
        Ok(integer_len) if integer_len < 7 => {
            let integer_len = integer_len + 1;
            if digits.len() <= integer_len {
                let _ = write!(out, "{digits:0<integer_len$}.0");
            } else {
                let (integer, fraction) = digits.split_at(integer_len);
                let _ = write!(out, "{integer}.{fraction}");
            }
        }
        Err(_) if *exponent >= -3 => {
            let zeros = "0".repeat(exponent.unsigned_abs() as usize - 1);
            let _ = write!(out, "0.{zeros}{digits}");
        }
        _ => {
            let (first, rest) = digits.split_at(1);
            let rest = if rest.is_empty() { "0" } else { rest };
            let _ = write!(out, "{first}.{rest}E{exponent}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! Every expected string below is the output of Spark 4.2's `Dataset.showString` /
    //! `Dataset.htmlString` for the same data (built there with SQL literals).
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
        DurationMicrosecondArray, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array,
        Int64Array, IntervalYearMonthArray, LargeStringArray, ListArray, MapArray, NullArray,
        StringArray, StringViewArray, StructArray, Time64NanosecondArray,
        TimestampMicrosecondArray, TimestampNanosecondArray,
    };
    use arrow::buffer::{NullBuffer, OffsetBuffer};
    use arrow::datatypes::{DataType, Field, Fields, Schema};
    use arrow::record_batch::{RecordBatch, RecordBatchOptions};

    use super::{ShowOptions, html_string, show_string};

    fn options(num_rows: usize, truncate: usize, vertical: bool, time_zone: &str) -> ShowOptions {
        ShowOptions {
            num_rows,
            truncate,
            vertical,
            time_zone: time_zone.to_owned(),
        }
    }

    /// The lines, each ending with a newline.
    fn lines(expected: &[&str]) -> String {
        expected.iter().map(|line| format!("{line}\n")).collect()
    }

    /// The lines joined by newlines (Spark ends its footers without one).
    fn joined(expected: &[&str]) -> String {
        expected.join("\n")
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    fn show(columns: Vec<(&str, ArrayRef)>, options: &ShowOptions) -> String {
        let batch = batch(columns);
        show_string(&batch.schema(), &[batch], options).unwrap()
    }

    fn html(columns: Vec<(&str, ArrayRef)>, options: &ShowOptions) -> String {
        let batch = batch(columns);
        html_string(&batch.schema(), &[batch], options).unwrap()
    }

    fn ints(values: &[Option<i32>]) -> ArrayRef {
        Arc::new(Int32Array::from(values.to_vec()))
    }

    fn longs(values: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(values.to_vec()))
    }

    fn doubles(values: &[Option<f64>]) -> ArrayRef {
        Arc::new(Float64Array::from(values.to_vec()))
    }

    fn strings(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    fn decimals(values: &[Option<i128>], precision: u8, scale: i8) -> ArrayRef {
        let array = Decimal128Array::from(values.to_vec());
        Arc::new(array.with_precision_and_scale(precision, scale).unwrap())
    }

    fn timestamps(values: &[Option<i64>], time_zone: Option<&str>) -> ArrayRef {
        let array = TimestampMicrosecondArray::from(values.to_vec());
        Arc::new(match time_zone {
            Some(zone) => array.with_timezone(zone),
            None => array,
        })
    }

    fn nulls(valid: Option<&[bool]>) -> Option<NullBuffer> {
        valid.map(|valid| NullBuffer::from(valid.to_vec()))
    }

    fn list(values: ArrayRef, offsets: &[i32], valid: Option<&[bool]>) -> ArrayRef {
        let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        let offsets = OffsetBuffer::new(offsets.to_vec().into());
        Arc::new(ListArray::new(field, offsets, values, nulls(valid)))
    }

    fn structure(fields: Vec<(&str, ArrayRef)>, valid: Option<&[bool]>) -> ArrayRef {
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = fields
            .into_iter()
            .map(|(name, array)| (Field::new(name, array.data_type().clone(), true), array))
            .unzip();
        Arc::new(StructArray::new(Fields::from(fields), arrays, nulls(valid)))
    }

    fn map(keys: ArrayRef, values: ArrayRef, offsets: &[i32], valid: Option<&[bool]>) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("key", keys.data_type().clone(), false),
            Field::new("value", values.data_type().clone(), true),
        ]);
        let entries = StructArray::new(fields.clone(), vec![keys, values], None);
        let field = Arc::new(Field::new("entries", DataType::Struct(fields), false));
        let offsets = OffsetBuffer::new(offsets.to_vec().into());
        Arc::new(MapArray::new(field, offsets, entries, nulls(valid), false))
    }

    fn basic_columns(strings_column: ArrayRef) -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("i", ints(&[Some(1), Some(2), None])),
            ("l", longs(&[Some(10), None, Some(-3)])),
            ("d", doubles(&[Some(1.5), None, Some(-0.25)])),
            ("s", strings_column),
            (
                "b",
                Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
            ),
        ]
    }

    const BASIC_STRINGS: [Option<&str>; 3] = [Some("a"), None, Some("hello world")];

    #[test]
    fn basic_types() {
        let columns = basic_columns(strings(&BASIC_STRINGS));
        let expected = lines(&[
            "+----+----+-----+-----------+-----+",
            "|   i|   l|    d|          s|    b|",
            "+----+----+-----+-----------+-----+",
            "|   1|  10|  1.5|          a| true|",
            "|   2|NULL| NULL|       NULL|false|",
            "|NULL|  -3|-0.25|hello world| NULL|",
            "+----+----+-----+-----------+-----+",
        ]);
        assert_eq!(show(columns, &options(20, 20, false, "UTC")), expected);
    }

    #[test]
    fn basic_types_without_truncation_are_left_aligned() {
        let columns = basic_columns(strings(&BASIC_STRINGS));
        let expected = lines(&[
            "+----+----+-----+-----------+-----+",
            "|i   |l   |d    |s          |b    |",
            "+----+----+-----+-----------+-----+",
            "|1   |10  |1.5  |a          |true |",
            "|2   |NULL|NULL |NULL       |false|",
            "|NULL|-3  |-0.25|hello world|NULL |",
            "+----+----+-----+-----------+-----+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, "UTC")), expected);
    }

    #[test]
    fn large_and_view_strings_print_like_strings() {
        let expected = lines(&[
            "+----+----+-----+-----------+-----+",
            "|   i|   l|    d|          s|    b|",
            "+----+----+-----+-----------+-----+",
            "|   1|  10|  1.5|          a| true|",
            "|   2|NULL| NULL|       NULL|false|",
            "|NULL|  -3|-0.25|hello world| NULL|",
            "+----+----+-----+-----------+-----+",
        ]);
        let large: ArrayRef = Arc::new(LargeStringArray::from(BASIC_STRINGS.to_vec()));
        let view: ArrayRef = Arc::new(StringViewArray::from(BASIC_STRINGS.to_vec()));
        for column in [large, view] {
            assert_eq!(
                show(basic_columns(column), &options(20, 20, false, "UTC")),
                expected
            );
        }
    }

    #[test]
    fn integers() {
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "b",
                Arc::new(Int8Array::from(vec![Some(-128), Some(127), None])),
            ),
            (
                "s",
                Arc::new(Int16Array::from(vec![Some(32767), Some(-32768), None])),
            ),
            ("i", ints(&[Some(i32::MIN), Some(i32::MAX), None])),
            ("l", longs(&[Some(i64::MAX), Some(i64::MIN), None])),
        ];
        let expected = lines(&[
            "+----+------+-----------+--------------------+",
            "|   b|     s|          i|                   l|",
            "+----+------+-----------+--------------------+",
            "|-128| 32767|-2147483648| 9223372036854775807|",
            "| 127|-32768| 2147483647|-9223372036854775808|",
            "|NULL|  NULL|       NULL|                NULL|",
            "+----+------+-----------+--------------------+",
        ]);
        assert_eq!(show(columns, &options(20, 20, false, "UTC")), expected);
    }

    #[test]
    fn doubles_follow_java_double_to_string() {
        let values = [
            Some(1.0),
            Some(0.1),
            Some(1e7),
            Some(1e-4),
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            Some(-0.0),
            Some(0.0),
            Some(1e-3),
            Some(9_999_999.0),
            Some(123_456_789.123),
            Some(1e300),
            Some(f64::from_bits(1)),
            Some(0.002),
            Some(f64::MAX),
            Some(1e21),
            Some(123_456_789_012_345_678.0),
            Some(100.0),
            Some(-1.5e-7),
            Some(0.300_000_000_000_000_04),
            Some(f64::MIN_POSITIVE),
            Some(12_345.678),
            Some(-9_999_999.0),
            Some(1e22),
            Some(f64::from_bits(1)),
            Some(3.0e-5),
            Some(0.00123),
            None,
        ];
        let expected = lines(&[
            "+-----------------------+",
            "|d                      |",
            "+-----------------------+",
            "|1.0                    |",
            "|0.1                    |",
            "|1.0E7                  |",
            "|1.0E-4                 |",
            "|NaN                    |",
            "|Infinity               |",
            "|-Infinity              |",
            "|-0.0                   |",
            "|0.0                    |",
            "|0.001                  |",
            "|9999999.0              |",
            "|1.23456789123E8        |",
            "|1.0E300                |",
            "|4.9E-324               |",
            "|0.002                  |",
            "|1.7976931348623157E308 |",
            "|1.0E21                 |",
            "|1.2345678901234568E17  |",
            "|100.0                  |",
            "|-1.5E-7                |",
            "|0.30000000000000004    |",
            "|2.2250738585072014E-308|",
            "|12345.678              |",
            "|-9999999.0             |",
            "|1.0E22                 |",
            "|4.9E-324               |",
            "|3.0E-5                 |",
            "|0.00123                |",
            "|NULL                   |",
            "+-----------------------+",
        ]);
        let shown = show(
            vec![("d", doubles(&values))],
            &options(100, 0, false, "UTC"),
        );
        assert_eq!(shown, expected);
    }

    /// Shortest digits as printed by Java 19 and later (Java 17 prints
    /// `9.999999999999999E22`, `1.9999999999999998E23` and `8.409999999999999E21`).
    #[test]
    fn doubles_use_shortest_digits() {
        let columns = vec![
            ("a", doubles(&[Some(1e23)])),
            ("b", doubles(&[Some(2e23)])),
            ("c", doubles(&[Some(8.41e21)])),
        ];
        let expected = lines(&[
            "+------+------+-------+",
            "|a     |b     |c      |",
            "+------+------+-------+",
            "|1.0E23|2.0E23|8.41E21|",
            "+------+------+-------+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, "UTC")), expected);
    }

    /// Values exactly halfway between two shortest decimals take the even last digit.
    #[test]
    fn floating_point_ties_round_to_even() {
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("d", doubles(&[Some(1_167_947_108_132_150.2)])),
            (
                "f",
                Arc::new(Float32Array::from(vec![Some(2_675_455.2_f32)])),
            ),
            (
                "g",
                Arc::new(Float32Array::from(vec![Some(364_613.62_f32)])),
            ),
        ];
        let expected = lines(&[
            "+---------------------+---------+---------+",
            "|d                    |f        |g        |",
            "+---------------------+---------+---------+",
            "|1.1679471081321502E15|2675455.2|364613.62|",
            "+---------------------+---------+---------+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, "UTC")), expected);
    }

    #[test]
    fn floats_follow_java_float_to_string() {
        let values = [
            Some(1.0),
            Some(0.1),
            Some(1e7),
            Some(3.4e38),
            Some(f32::from_bits(1)),
            Some(0.3),
            Some(16_777_216.0),
            Some(-2.5),
            Some(1e-4),
            Some(f32::MAX),
            Some(f32::NAN),
            Some(f32::INFINITY),
            Some(f32::NEG_INFINITY),
            Some(f32::MIN_POSITIVE),
            Some(0.001),
            Some(9_999_999.0),
            Some(123.456),
            Some(33_554_432.0),
            Some(-0.0),
            Some(1.0e-10),
            None,
        ];
        let column: ArrayRef = Arc::new(Float32Array::from(values.to_vec()));
        let expected = lines(&[
            "+-------------+",
            "|f            |",
            "+-------------+",
            "|1.0          |",
            "|0.1          |",
            "|1.0E7        |",
            "|3.4E38       |",
            "|1.4E-45      |",
            "|0.3          |",
            "|1.6777216E7  |",
            "|-2.5         |",
            "|1.0E-4       |",
            "|3.4028235E38 |",
            "|NaN          |",
            "|Infinity     |",
            "|-Infinity    |",
            "|1.1754944E-38|",
            "|0.001        |",
            "|9999999.0    |",
            "|123.456      |",
            "|3.3554432E7  |",
            "|-0.0         |",
            "|1.0E-10      |",
            "|NULL         |",
            "+-------------+",
        ]);
        let shown = show(vec![("f", column)], &options(100, 0, false, "UTC"));
        assert_eq!(shown, expected);
    }

    #[test]
    fn decimals_keep_their_scale() {
        let columns = vec![
            ("a", decimals(&[Some(150), Some(-150), Some(0)], 3, 2)),
            (
                "b",
                decimals(&[Some(0), Some(-123), Some(9_999_999_999)], 10, 0),
            ),
            (
                "c",
                decimals(
                    &[
                        Some(12_345_678_901_234_567_890_123_456_789_012_345_678),
                        Some(-99_999_999_999_999_999_999_999_999_999_999_999_999),
                        None,
                    ],
                    38,
                    0,
                ),
            ),
            (
                "d",
                decimals(
                    &[
                        Some(-10_000_000),
                        Some(12_345_678_901_234_567_890_123_456_781_234_567_890),
                        None,
                    ],
                    38,
                    10,
                ),
            ),
            ("e", decimals(&[Some(12_345), Some(-1), Some(0)], 5, 5)),
        ];
        let expected = lines(&[
            "+-----+----------+---------------------------------------+---------------------------------------+--------+",
            "|a    |b         |c                                      |d                                      |e       |",
            "+-----+----------+---------------------------------------+---------------------------------------+--------+",
            "|1.50 |0         |12345678901234567890123456789012345678 |-0.0010000000                          |0.12345 |",
            "|-1.50|-123      |-99999999999999999999999999999999999999|1234567890123456789012345678.1234567890|-0.00001|",
            "|0.00 |9999999999|NULL                                   |NULL                                   |0.00000 |",
            "+-----+----------+---------------------------------------+---------------------------------------+--------+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, "UTC")), expected);
    }

    #[test]
    fn dates() {
        let days = [
            18_263, -719_162, -1, 0, -719_893, 2_932_897, 2_932_896, 11_016,
        ];
        let mut values: Vec<Option<i32>> = days.into_iter().map(Some).collect();
        values.push(None);
        let column: ArrayRef = Arc::new(Date32Array::from(values));
        let expected = lines(&[
            "+------------+",
            "|d           |",
            "+------------+",
            "|2020-01-02  |",
            "|0001-01-01  |",
            "|1969-12-31  |",
            "|1970-01-01  |",
            "|-0001-01-01 |",
            "|+10000-01-01|",
            "|9999-12-31  |",
            "|2000-02-29  |",
            "|NULL        |",
            "+------------+",
        ]);
        assert_eq!(
            show(vec![("d", column)], &options(100, 0, false, "UTC")),
            expected
        );
    }

    const INSTANTS: [i64; 15] = [
        1_577_934_245_123_000,
        1_577_934_245_000_000,
        -1,
        0,
        1_577_934_245_100_000,
        1_577_934_245_000_001,
        -62_135_596_800_000_000,
        253_402_300_799_999_999,
        -5_000_000_000_000_000,
        1_710_064_800_000_000,
        1_710_064_799_999_999,
        1_699_174_800_000_000,
        1_699_178_400_000_000,
        -62_198_755_200_000_000,
        253_402_300_800_000_000,
    ];

    fn instants(time_zone: Option<&str>) -> ArrayRef {
        let mut values: Vec<Option<i64>> = INSTANTS.into_iter().map(Some).collect();
        values.push(None);
        timestamps(&values, time_zone)
    }

    fn show_instants(field_zone: Option<&str>, session_zone: &str) -> String {
        let options = options(100, 0, false, session_zone);
        show(vec![("ts", instants(field_zone))], &options)
    }

    #[test]
    fn timestamps_in_utc() {
        let expected = lines(&[
            "+--------------------------+",
            "|ts                        |",
            "+--------------------------+",
            "|2020-01-02 03:04:05.123   |",
            "|2020-01-02 03:04:05       |",
            "|1969-12-31 23:59:59.999999|",
            "|1970-01-01 00:00:00       |",
            "|2020-01-02 03:04:05.1     |",
            "|2020-01-02 03:04:05.000001|",
            "|0001-01-01 00:00:00       |",
            "|9999-12-31 23:59:59.999999|",
            "|1811-07-23 15:06:40       |",
            "|2024-03-10 10:00:00       |",
            "|2024-03-10 09:59:59.999999|",
            "|2023-11-05 09:00:00       |",
            "|2023-11-05 10:00:00       |",
            "|-0001-01-01 00:00:00      |",
            "|+10000-01-01 00:00:00     |",
            "|NULL                      |",
            "+--------------------------+",
        ]);
        assert_eq!(show_instants(Some("UTC"), "UTC"), expected);
    }

    #[test]
    fn timestamps_in_los_angeles_including_dst_and_local_mean_time() {
        let expected = lines(&[
            "+--------------------------+",
            "|ts                        |",
            "+--------------------------+",
            "|2020-01-01 19:04:05.123   |",
            "|2020-01-01 19:04:05       |",
            "|1969-12-31 15:59:59.999999|",
            "|1969-12-31 16:00:00       |",
            "|2020-01-01 19:04:05.1     |",
            "|2020-01-01 19:04:05.000001|",
            "|0000-12-31 16:07:02       |",
            "|9999-12-31 15:59:59.999999|",
            "|1811-07-23 07:13:42       |",
            "|2024-03-10 03:00:00       |",
            "|2024-03-10 01:59:59.999999|",
            "|2023-11-05 01:00:00       |",
            "|2023-11-05 02:00:00       |",
            "|-0002-12-31 16:07:02      |",
            "|9999-12-31 16:00:00       |",
            "|NULL                      |",
            "+--------------------------+",
        ]);
        let zone = "America/Los_Angeles";
        assert_eq!(show_instants(Some(zone), zone), expected);
    }

    #[test]
    fn timestamps_use_the_session_zone_not_the_field_zone() {
        let expected = lines(&[
            "+----------------------------+",
            "|ts                          |",
            "+----------------------------+",
            "|2020-01-02 12:04:05.123     |",
            "|2020-01-02 12:04:05         |",
            "|1970-01-01 08:59:59.999999  |",
            "|1970-01-01 09:00:00         |",
            "|2020-01-02 12:04:05.1       |",
            "|2020-01-02 12:04:05.000001  |",
            "|0001-01-01 09:18:59         |",
            "|+10000-01-01 08:59:59.999999|",
            "|1811-07-24 00:25:39         |",
            "|2024-03-10 19:00:00         |",
            "|2024-03-10 18:59:59.999999  |",
            "|2023-11-05 18:00:00         |",
            "|2023-11-05 19:00:00         |",
            "|-0001-01-01 09:18:59        |",
            "|+10000-01-01 09:00:00       |",
            "|NULL                        |",
            "+----------------------------+",
        ]);
        assert_eq!(show_instants(Some("UTC"), "Asia/Tokyo"), expected);
    }

    #[test]
    fn timestamps_in_an_offset_zone() {
        let expected = lines(&[
            "+----------------------------+",
            "|ts                          |",
            "+----------------------------+",
            "|2020-01-02 08:34:05.123     |",
            "|2020-01-02 08:34:05         |",
            "|1970-01-01 05:29:59.999999  |",
            "|1970-01-01 05:30:00         |",
            "|2020-01-02 08:34:05.1       |",
            "|2020-01-02 08:34:05.000001  |",
            "|0001-01-01 05:30:00         |",
            "|+10000-01-01 05:29:59.999999|",
            "|1811-07-23 20:36:40         |",
            "|2024-03-10 15:30:00         |",
            "|2024-03-10 15:29:59.999999  |",
            "|2023-11-05 14:30:00         |",
            "|2023-11-05 15:30:00         |",
            "|-0001-01-01 05:30:00        |",
            "|+10000-01-01 05:30:00       |",
            "|NULL                        |",
            "+----------------------------+",
        ]);
        for zone in ["+05:30", "+0530", "GMT+05:30", "UTC+5:30"] {
            assert_eq!(show_instants(Some("UTC"), zone), expected, "{zone}");
        }
    }

    #[test]
    fn timestamps_without_zone_are_not_converted() {
        let expected = lines(&[
            "+--------------------------+",
            "|ts                        |",
            "+--------------------------+",
            "|2020-01-02 03:04:05.123   |",
            "|2020-01-02 03:04:05       |",
            "|1969-12-31 23:59:59.999999|",
            "|1970-01-01 00:00:00       |",
            "|2020-01-02 03:04:05.1     |",
            "|2020-01-02 03:04:05.000001|",
            "|0001-01-01 00:00:00       |",
            "|9999-12-31 23:59:59.999999|",
            "|1811-07-23 15:06:40       |",
            "|2024-03-10 10:00:00       |",
            "|2024-03-10 09:59:59.999999|",
            "|2023-11-05 09:00:00       |",
            "|2023-11-05 10:00:00       |",
            "|-0001-01-01 00:00:00      |",
            "|+10000-01-01 00:00:00     |",
            "|NULL                      |",
            "+--------------------------+",
        ]);
        assert_eq!(show_instants(None, "America/Los_Angeles"), expected);
    }

    #[test]
    fn timestamp_ntz_next_to_timestamp() {
        let zone = "America/Los_Angeles";
        let columns = vec![
            ("ntz", timestamps(&[Some(1_577_934_245_500_000)], None)),
            ("ts", timestamps(&[Some(1_577_934_245_500_000)], Some(zone))),
        ];
        let expected = lines(&[
            "+---------------------+---------------------+",
            "|ntz                  |ts                   |",
            "+---------------------+---------------------+",
            "|2020-01-02 03:04:05.5|2020-01-01 19:04:05.5|",
            "+---------------------+---------------------+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, zone)), expected);
    }

    /// Other units print as the microsecond value Spark would hold.
    #[test]
    fn timestamps_in_nanoseconds() {
        let column = TimestampNanosecondArray::from(vec![Some(1_577_934_245_123_000_000)]);
        let column: ArrayRef = Arc::new(column.with_timezone("UTC"));
        let shown = show(vec![("ts", column)], &options(20, 0, false, "UTC"));
        let expected = ["+-----------------------+", "|ts                     |"];
        assert!(shown.starts_with(&lines(&expected)), "{shown}");
        assert!(shown.contains("|2020-01-02 03:04:05.123|"), "{shown}");
    }

    #[test]
    fn unknown_session_zone_is_an_error_only_for_timestamps() {
        let bad = options(20, 20, false, "Not/AZone");
        let batch = batch(vec![("ts", instants(Some("UTC")))]);
        assert!(show_string(&batch.schema(), &[batch], &bad).is_err());
        let batch = self::batch(vec![("i", ints(&[Some(1)]))]);
        assert!(show_string(&batch.schema(), &[batch], &bad).is_ok());
    }

    #[test]
    fn binary_as_hex_bytes() {
        let values: Vec<Option<&[u8]>> = vec![
            Some(&[0x01, 0x02, 0xFF]),
            Some(&[]),
            None,
            Some(&[0x00, 0xAB, 0x10]),
            Some(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x01, 0x23]),
        ];
        let column: ArrayRef = Arc::new(BinaryArray::from(values));
        let expected = lines(&[
            "+--------------------+",
            "|                   b|",
            "+--------------------+",
            "|          [01 02 FF]|",
            "|                  []|",
            "|                NULL|",
            "|          [00 AB 10]|",
            "|[01 23 45 67 89 A...|",
            "+--------------------+",
        ]);
        assert_eq!(
            show(vec![("b", column)], &options(20, 20, false, "UTC")),
            expected
        );
    }

    fn nested_columns() -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("a", list(ints(&[Some(1), Some(2), None]), &[0, 3], None)),
            (
                "b",
                map(
                    strings(&[Some("a"), Some("b")]),
                    ints(&[Some(1), None]),
                    &[0, 2],
                    None,
                ),
            ),
            (
                "c",
                structure(
                    vec![("x", ints(&[Some(1)])), ("y", strings(&[Some("x")]))],
                    None,
                ),
            ),
            (
                "d",
                list(
                    structure(vec![("x", ints(&[Some(1)])), ("y", strings(&[None]))], None),
                    &[0, 1],
                    None,
                ),
            ),
            (
                "e",
                map(
                    ints(&[Some(1)]),
                    list(ints(&[Some(1), Some(2)]), &[0, 2], None),
                    &[0, 1],
                    None,
                ),
            ),
            (
                "f",
                list(
                    list(strings(&[Some("a"), None]), &[0, 2], None),
                    &[0, 1],
                    None,
                ),
            ),
            ("g", list(ints(&[]), &[0, 0], Some(&[false]))),
            ("h", structure(vec![("x", ints(&[None]))], None)),
            ("i", list(ints(&[]), &[0, 0], None)),
            ("j", map(strings(&[]), ints(&[]), &[0, 0], None)),
        ]
    }

    #[test]
    fn arrays_maps_and_structs() {
        let expected = lines(&[
            "+------------+-------------------+------+-----------+-------------+-----------+----+------+---+---+",
            "|a           |b                  |c     |d          |e            |f          |g   |h     |i  |j  |",
            "+------------+-------------------+------+-----------+-------------+-----------+----+------+---+---+",
            "|[1, 2, NULL]|{a -> 1, b -> NULL}|{1, x}|[{1, NULL}]|{1 -> [1, 2]}|[[a, NULL]]|NULL|{NULL}|[] |{} |",
            "+------------+-------------------+------+-----------+-------------+-----------+----+------+---+---+",
        ]);
        assert_eq!(
            show(nested_columns(), &options(20, 0, false, "UTC")),
            expected
        );
    }

    #[test]
    fn arrays_maps_and_structs_right_aligned() {
        let expected = lines(&[
            "+------------+-------------------+------+-----------+-------------+-----------+----+------+---+---+",
            "|           a|                  b|     c|          d|            e|          f|   g|     h|  i|  j|",
            "+------------+-------------------+------+-----------+-------------+-----------+----+------+---+---+",
            "|[1, 2, NULL]|{a -> 1, b -> NULL}|{1, x}|[{1, NULL}]|{1 -> [1, 2]}|[[a, NULL]]|NULL|{NULL}| []| {}|",
            "+------------+-------------------+------+-----------+-------------+-----------+----+------+---+---+",
        ]);
        assert_eq!(
            show(nested_columns(), &options(20, 20, false, "UTC")),
            expected
        );
    }

    #[test]
    fn nested_values_use_the_same_formatting() {
        let zone = "America/Los_Angeles";
        let binary: ArrayRef = Arc::new(BinaryArray::from(vec![Some(&[1_u8, 2][..])]));
        let date: ArrayRef = Arc::new(Date32Array::from(vec![Some(18_263)]));
        let flag: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true)]));
        let line_break = structure(vec![("z", strings(&[Some("line\nbreak")]))], None);
        let columns = vec![
            (
                "k",
                list(
                    doubles(&[Some(1.0), Some(f64::NAN), Some(-0.0), Some(1e7), None]),
                    &[0, 5],
                    None,
                ),
            ),
            (
                "l",
                list(
                    timestamps(&[Some(1_577_934_245_123_000), None], Some(zone)),
                    &[0, 2],
                    None,
                ),
            ),
            (
                "m",
                structure(
                    vec![
                        ("d", decimals(&[Some(150)], 5, 2)),
                        ("b", binary),
                        ("dt", date),
                    ],
                    None,
                ),
            ),
            (
                "n",
                structure(
                    vec![
                        (
                            "s",
                            structure(
                                vec![
                                    ("a", ints(&[Some(1)])),
                                    ("b", list(strings(&[Some("x"), None]), &[0, 2], None)),
                                ],
                                None,
                            ),
                        ),
                        (
                            "m",
                            map(strings(&[Some("k")]), strings(&[Some("v")]), &[0, 1], None),
                        ),
                    ],
                    None,
                ),
            ),
            (
                "o",
                structure(
                    vec![("a", ints(&[None])), ("b", strings(&[None]))],
                    Some(&[false]),
                ),
            ),
            (
                "p",
                map(
                    strings(&[Some("p")]),
                    structure(vec![("q", flag), ("r", longs(&[None]))], None),
                    &[0, 1],
                    None,
                ),
            ),
            (
                "q",
                list(
                    map(
                        strings(&[Some("a")]),
                        list(line_break, &[0, 1], None),
                        &[0, 1, 1],
                        Some(&[true, false]),
                    ),
                    &[0, 2],
                    None,
                ),
            ),
        ];
        let expected = lines(&[
            "+-----------------------------+-------------------------------+---------------------------+--------------------------+----+-------------------+------------------------------+",
            "|k                            |l                              |m                          |n                         |o   |p                  |q                             |",
            "+-----------------------------+-------------------------------+---------------------------+--------------------------+----+-------------------+------------------------------+",
            "|[1.0, NaN, -0.0, 1.0E7, NULL]|[2020-01-01 19:04:05.123, NULL]|{1.50, [01 02], 2020-01-02}|{{1, [x, NULL]}, {k -> v}}|NULL|{p -> {true, NULL}}|[{a -> [{line\\nbreak}]}, NULL]|",
            "+-----------------------------+-------------------------------+---------------------------+--------------------------+----+-------------------+------------------------------+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, zone)), expected);
    }

    fn string_columns() -> Vec<(&'static str, ArrayRef)> {
        let first = [
            Some(""),
            Some("界界界"),
            Some("a\nb\tc\rdfe\u{8}f\u{b}g\u{7}h"),
            Some("abcdefghijklmnopqrstuvwxyz"),
            Some("界界界界界界界界界界界界"),
            Some("😀😀😀"),
            Some("abc"),
        ];
        let second = [
            Some("x"),
            Some("ＡＢＣ"),
            Some("한국어 텍스트입니다"),
            Some("ｱｲｳｴｵ"),
            None,
            Some("😀"),
            Some("abcd"),
        ];
        vec![("s", strings(&first)), ("名前\n2", strings(&second))]
    }

    fn show_strings(truncate: usize) -> String {
        show(string_columns(), &options(20, truncate, false, "UTC"))
    }

    #[test]
    fn strings_truncated_at_20() {
        assert_eq!(
            show_strings(20),
            lines(&[
                "+------------------------+-------------------+",
                "|                       s|            名前\\n2|",
                "+------------------------+-------------------+",
                "|                        |                  x|",
                "|                  界界界|             ＡＢＣ|",
                "|    a\\nb\\tc\\rdfe\\bf\\v...|한국어 텍스트입니다|",
                "|    abcdefghijklmnopq...|              ｱｲｳｴｵ|",
                "|界界界界界界界界界界界界|               NULL|",
                "|                  😀😀😀|                 😀|",
                "|                     abc|               abcd|",
                "+------------------------+-------------------+",
            ])
        );
    }

    #[test]
    fn strings_not_truncated() {
        assert_eq!(
            show_strings(0),
            lines(&[
                "+--------------------------+-------------------+",
                "|s                         |名前\\n2            |",
                "+--------------------------+-------------------+",
                "|                          |x                  |",
                "|界界界                    |ＡＢＣ             |",
                "|a\\nb\\tc\\rdfe\\bf\\vg\\ah     |한국어 텍스트입니다|",
                "|abcdefghijklmnopqrstuvwxyz|ｱｲｳｴｵ              |",
                "|界界界界界界界界界界界界  |NULL               |",
                "|😀😀😀                    |😀                 |",
                "|abc                       |abcd               |",
                "+--------------------------+-------------------+",
            ])
        );
    }

    #[test]
    fn strings_truncated_at_3_without_ellipsis() {
        assert_eq!(
            show_strings(3),
            lines(&[
                "+------+-------+",
                "|     s|名前\\n2|",
                "+------+-------+",
                "|      |      x|",
                "|界界界| ＡＢＣ|",
                "|   a\\n| 한국어|",
                "|   abc|    ｱｲｳ|",
                "|界界界|    NUL|",
                "|   😀?|     😀|",
                "|   abc|    abc|",
                "+------+-------+",
            ])
        );
    }

    #[test]
    fn strings_truncated_at_4() {
        assert_eq!(
            show_strings(4),
            lines(&[
                "+------+-------+",
                "|     s|名前\\n2|",
                "+------+-------+",
                "|      |      x|",
                "|界界界| ＡＢＣ|",
                "|  a...|  한...|",
                "|  a...|   ｱ...|",
                "| 界...|   NULL|",
                "|  ?...|     😀|",
                "|   abc|   abcd|",
                "+------+-------+",
            ])
        );
    }

    #[test]
    fn strings_truncated_at_10() {
        assert_eq!(
            show_strings(10),
            lines(&[
                "+-----------------+-------------------+",
                "|                s|            名前\\n2|",
                "+-----------------+-------------------+",
                "|                 |                  x|",
                "|           界界界|             ＡＢＣ|",
                "|       a\\nb\\tc...|한국어 텍스트입니다|",
                "|       abcdefg...|              ｱｲｳｴｵ|",
                "|界界界界界界界...|               NULL|",
                "|           😀😀😀|                 😀|",
                "|              abc|               abcd|",
                "+-----------------+-------------------+",
            ])
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        let columns = vec![
            ("s\tt", strings(&[Some("a\u{c}b\u{7}c\u{b}d\u{8}e\r\n\tf")])),
            ("u", strings(&[Some("x\u{a0}yÿĀ")])),
        ];
        let expected = lines(&[
            "+--------------------+-----+",
            "|s\\tt                |u    |",
            "+--------------------+-----+",
            "|a\\fb\\ac\\vd\\be\\r\\n\\tf|x yÿĀ|",
            "+--------------------+-----+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, "UTC")), expected);
    }

    fn three_rows() -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("id", ints(&[Some(1), Some(2), Some(3)])),
            ("name", strings(&[Some("a"), Some("bb"), Some("ccc")])),
        ]
    }

    #[test]
    fn footer_when_rows_are_left_out() {
        let expected = joined(&[
            "+---+----+",
            "| id|name|",
            "+---+----+",
            "|  1|   a|",
            "|  2|  bb|",
            "+---+----+",
            "only showing top 2 rows",
        ]);
        assert_eq!(show(three_rows(), &options(2, 20, false, "UTC")), expected);
    }

    #[test]
    fn footer_over_several_batches() {
        let whole = batch(three_rows());
        let parts: Vec<RecordBatch> = (0..3).map(|row| whole.slice(row, 1)).collect();
        let shown = show_string(&whole.schema(), &parts, &options(2, 20, false, "UTC")).unwrap();
        assert_eq!(
            shown,
            joined(&[
                "+---+----+",
                "| id|name|",
                "+---+----+",
                "|  1|   a|",
                "|  2|  bb|",
                "+---+----+",
                "only showing top 2 rows",
            ])
        );
    }

    #[test]
    fn footer_for_one_row() {
        let expected = joined(&[
            "+---+----+",
            "| id|name|",
            "+---+----+",
            "|  1|   a|",
            "+---+----+",
            "only showing top 1 row",
        ]);
        assert_eq!(show(three_rows(), &options(1, 20, false, "UTC")), expected);
    }

    #[test]
    fn footer_for_zero_rows() {
        let expected = joined(&[
            "+---+----+",
            "| id|name|",
            "+---+----+",
            "+---+----+",
            "only showing top 0 rows",
        ]);
        assert_eq!(show(three_rows(), &options(0, 20, false, "UTC")), expected);
    }

    #[test]
    fn no_footer_when_all_rows_fit() {
        let expected = lines(&[
            "+---+----+",
            "| id|name|",
            "+---+----+",
            "|  1|   a|",
            "|  2|  bb|",
            "|  3| ccc|",
            "+---+----+",
        ]);
        assert_eq!(show(three_rows(), &options(5, 20, false, "UTC")), expected);
    }

    #[test]
    fn vertical_footer() {
        let expected = joined(&[
            "-RECORD 0---",
            " id   | 1   ",
            " name | a   ",
            "-RECORD 1---",
            " id   | 2   ",
            " name | bb  ",
            "only showing top 2 rows",
        ]);
        assert_eq!(show(three_rows(), &options(2, 20, true, "UTC")), expected);
    }

    #[test]
    fn vertical_footer_for_one_row() {
        let expected = joined(&[
            "-RECORD 0---",
            " id   | 1   ",
            " name | a   ",
            "only showing top 1 row",
        ]);
        assert_eq!(show(three_rows(), &options(1, 20, true, "UTC")), expected);
    }

    #[test]
    fn vertical_with_zero_rows_requested() {
        let expected = joined(&["(0 rows)"]);
        assert_eq!(show(three_rows(), &options(0, 20, true, "UTC")), expected);
    }

    fn empty_columns() -> Vec<(&'static str, ArrayRef)> {
        vec![("id", ints(&[])), ("name", strings(&[]))]
    }

    #[test]
    fn empty_result() {
        let expected = lines(&["+---+----+", "| id|name|", "+---+----+", "+---+----+"]);
        assert_eq!(
            show(empty_columns(), &options(20, 20, false, "UTC")),
            expected
        );
    }

    #[test]
    fn empty_result_without_batches() {
        let schema = batch(empty_columns()).schema();
        let shown = show_string(&schema, &[], &options(20, 20, false, "UTC")).unwrap();
        assert_eq!(
            shown,
            lines(&["+---+----+", "| id|name|", "+---+----+", "+---+----+",])
        );
    }

    #[test]
    fn empty_result_left_aligned() {
        let expected = lines(&["+---+----+", "|id |name|", "+---+----+", "+---+----+"]);
        assert_eq!(
            show(empty_columns(), &options(20, 0, false, "UTC")),
            expected
        );
    }

    #[test]
    fn empty_result_vertical() {
        let expected = joined(&["(0 rows)"]);
        assert_eq!(
            show(empty_columns(), &options(20, 20, true, "UTC")),
            expected
        );
    }

    #[test]
    fn empty_result_html() {
        let expected = lines(&[
            "<table border='1'>",
            "<tr><th>id</th><th>name</th></tr>",
            "</table>",
        ]);
        assert_eq!(
            html(empty_columns(), &options(20, 20, false, "UTC")),
            expected
        );
    }

    #[test]
    fn zero_columns() {
        let schema = Arc::new(Schema::empty());
        let row_count = RecordBatchOptions::new().with_row_count(Some(3));
        let batch =
            RecordBatch::try_new_with_options(Arc::clone(&schema), vec![], &row_count).unwrap();
        let batches = [batch];
        let shown = show_string(&schema, &batches, &options(20, 20, false, "UTC")).unwrap();
        assert_eq!(shown, lines(&["++", "||", "++", "||", "||", "||", "++",]));
        let shown = html_string(&schema, &batches, &options(20, 20, false, "UTC")).unwrap();
        assert_eq!(
            shown,
            lines(&[
                "<table border='1'>",
                "<tr><th></th></tr>",
                "<tr><td></td></tr>",
                "<tr><td></td></tr>",
                "<tr><td></td></tr>",
                "</table>",
            ])
        );
    }

    fn vertical_columns() -> Vec<(&'static str, ArrayRef)> {
        let long = [
            Some("abcdefghijklmnopqrstuvwxyz"),
            Some("界界界界界界界界界界界界"),
            Some("line\nbreak"),
        ];
        vec![
            ("id", ints(&[Some(1), Some(2), Some(3)])),
            ("long_column_name", strings(&long)),
            ("d", doubles(&[Some(1.5), None, Some(-0.0)])),
            (
                "arr",
                list(
                    ints(&[Some(1), Some(2)]),
                    &[0, 0, 2, 2],
                    Some(&[false, true, true]),
                ),
            ),
        ]
    }

    #[test]
    fn vertical_truncated_at_20() {
        let expected = lines(&[
            "-RECORD 0------------------------------------",
            " id               | 1                        ",
            " long_column_name | abcdefghijklmnopq...     ",
            " d                | 1.5                      ",
            " arr              | NULL                     ",
            "-RECORD 1------------------------------------",
            " id               | 2                        ",
            " long_column_name | 界界界界界界界界界界界界 ",
            " d                | NULL                     ",
            " arr              | [1, 2]                   ",
            "-RECORD 2------------------------------------",
            " id               | 3                        ",
            " long_column_name | line\\nbreak              ",
            " d                | -0.0                     ",
            " arr              | []                       ",
        ]);
        assert_eq!(
            show(vertical_columns(), &options(20, 20, true, "UTC")),
            expected
        );
    }

    #[test]
    fn vertical_not_truncated() {
        let expected = lines(&[
            "-RECORD 0--------------------------------------",
            " id               | 1                          ",
            " long_column_name | abcdefghijklmnopqrstuvwxyz ",
            " d                | 1.5                        ",
            " arr              | NULL                       ",
            "-RECORD 1--------------------------------------",
            " id               | 2                          ",
            " long_column_name | 界界界界界界界界界界界界   ",
            " d                | NULL                       ",
            " arr              | [1, 2]                     ",
            "-RECORD 2--------------------------------------",
            " id               | 3                          ",
            " long_column_name | line\\nbreak                ",
            " d                | -0.0                       ",
            " arr              | []                         ",
        ]);
        assert_eq!(
            show(vertical_columns(), &options(20, 0, true, "UTC")),
            expected
        );
    }

    #[test]
    fn vertical_truncated_at_5() {
        let expected = lines(&[
            "-RECORD 0-------------------",
            " id               | 1       ",
            " long_column_name | ab...   ",
            " d                | 1.5     ",
            " arr              | NULL    ",
            "-RECORD 1-------------------",
            " id               | 2       ",
            " long_column_name | 界界... ",
            " d                | NULL    ",
            " arr              | [1...   ",
            "-RECORD 2-------------------",
            " id               | 3       ",
            " long_column_name | li...   ",
            " d                | -0.0    ",
            " arr              | []      ",
        ]);
        assert_eq!(
            show(vertical_columns(), &options(20, 5, true, "UTC")),
            expected
        );
    }

    fn html_columns() -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("id<1>", ints(&[Some(1), Some(2)])),
            ("a&b", strings(&[Some("x&y <b>\"q\"</b> 's'"), None])),
            ("c", strings(&[Some("café €5 α→β"), Some("")])),
            (
                "d",
                strings(&[Some("abcdefghijklmnopqrstuvwxyz"), Some("ok")]),
            ),
        ]
    }

    #[test]
    fn html_escapes_markup_and_named_entities() {
        let expected = lines(&[
            "<table border='1'>",
            "<tr><th>id&lt;1&gt;</th><th>a&amp;b</th><th>c</th><th>d</th></tr>",
            "<tr><td>1</td><td>x&amp;y &lt;b&gt;&quot;q&quot;&lt;/b&gt; 's'</td><td>caf&eacute; &euro;5 &alpha;&rarr;&beta;</td><td>abcdefghijklmnopq...</td></tr>",
            "<tr><td>2</td><td>NULL</td><td></td><td>ok</td></tr>",
            "</table>",
        ]);
        assert_eq!(
            html(html_columns(), &options(20, 20, false, "UTC")),
            expected
        );
    }

    #[test]
    fn html_not_truncated() {
        let expected = lines(&[
            "<table border='1'>",
            "<tr><th>id&lt;1&gt;</th><th>a&amp;b</th><th>c</th><th>d</th></tr>",
            "<tr><td>1</td><td>x&amp;y &lt;b&gt;&quot;q&quot;&lt;/b&gt; 's'</td><td>caf&eacute; &euro;5 &alpha;&rarr;&beta;</td><td>abcdefghijklmnopqrstuvwxyz</td></tr>",
            "<tr><td>2</td><td>NULL</td><td></td><td>ok</td></tr>",
            "</table>",
        ]);
        assert_eq!(
            html(html_columns(), &options(20, 0, false, "UTC")),
            expected
        );
    }

    #[test]
    fn html_footer() {
        let expected = lines(&[
            "<table border='1'>",
            "<tr><th>id&lt;1&gt;</th><th>a&amp;b</th><th>c</th><th>d</th></tr>",
            "<tr><td>1</td><td>x&amp;y &lt;b&gt;&quot;q&quot;&lt;/b&gt; 's'</td><td>caf&eacute; &euro;5 &alpha;&rarr;&beta;</td><td>abcdefghijklmnopq...</td></tr>",
            "</table>",
            "only showing top 1 row",
        ]);
        assert_eq!(
            html(html_columns(), &options(1, 20, false, "UTC")),
            expected
        );
    }

    #[test]
    fn html_nested_values() {
        let binary: ArrayRef = Arc::new(BinaryArray::from(vec![Some(&[0x0A_u8, 0xFF][..])]));
        let columns = vec![
            ("a", list(ints(&[Some(1), None]), &[0, 2], None)),
            (
                "b",
                map(
                    strings(&[Some("k")]),
                    strings(&[Some("<v>")]),
                    &[0, 1],
                    None,
                ),
            ),
            ("c", structure(vec![("x", doubles(&[Some(1.0)]))], None)),
            ("d", binary),
        ];
        let expected = lines(&[
            "<table border='1'>",
            "<tr><th>a</th><th>b</th><th>c</th><th>d</th></tr>",
            "<tr><td>[1, NULL]</td><td>{k -&gt; &lt;v&gt;}</td><td>{1.0}</td><td>[0A FF]</td></tr>",
            "</table>",
        ]);
        assert_eq!(html(columns, &options(20, 20, false, "UTC")), expected);
    }

    #[test]
    fn html_control_characters_and_latin1_entities() {
        let columns = vec![
            ("s\tt", strings(&[Some("a\u{c}b\u{7}c\u{b}d\u{8}e\r\n\tf")])),
            ("u", strings(&[Some("x\u{a0}yÿĀ")])),
        ];
        let expected = lines(&[
            "<table border='1'>",
            "<tr><th>s\\tt</th><th>u</th></tr>",
            "<tr><td>a\\fb\\ac\\vd\\be\\r\\n\\tf</td><td>x&nbsp;y&yuml;Ā</td></tr>",
            "</table>",
        ]);
        assert_eq!(html(columns, &options(20, 0, false, "UTC")), expected);
    }

    #[test]
    fn intervals() {
        let day_time = DurationMicrosecondArray::from(vec![
            Some(93_784_500_000),
            Some(-93_784_000_001),
            Some(0),
            Some(-500_000),
            Some(i64::MAX),
            None,
        ]);
        let year_month = IntervalYearMonthArray::from(vec![
            Some(14),
            Some(-14),
            Some(0),
            Some(-1),
            Some(i32::MAX),
            None,
        ]);
        let columns: Vec<(&str, ArrayRef)> =
            vec![("dt", Arc::new(day_time)), ("ym", Arc::new(year_month))];
        let expected = lines(&[
            "+--------------------------------------------------+------------------------------------+",
            "|dt                                                |ym                                  |",
            "+--------------------------------------------------+------------------------------------+",
            "|INTERVAL '1 02:03:04.5' DAY TO SECOND             |INTERVAL '1-2' YEAR TO MONTH        |",
            "|INTERVAL '-1 02:03:04.000001' DAY TO SECOND       |INTERVAL '-1-2' YEAR TO MONTH       |",
            "|INTERVAL '0 00:00:00' DAY TO SECOND               |INTERVAL '0-0' YEAR TO MONTH        |",
            "|INTERVAL '-0 00:00:00.5' DAY TO SECOND            |INTERVAL '-0-1' YEAR TO MONTH       |",
            "|INTERVAL '106751991 04:00:54.775807' DAY TO SECOND|INTERVAL '178956970-7' YEAR TO MONTH|",
            "|NULL                                              |NULL                                |",
            "+--------------------------------------------------+------------------------------------+",
        ]);
        assert_eq!(show(columns, &options(20, 0, false, "UTC")), expected);
    }

    #[test]
    fn times() {
        let column = Time64NanosecondArray::from(vec![
            Some(45_296_500_000_000),
            Some(0),
            Some(86_399_999_999_000),
            Some(3_723_000_001_000),
            None,
        ]);
        let expected = lines(&[
            "+---------------+",
            "|t              |",
            "+---------------+",
            "|12:34:56.5     |",
            "|00:00:00       |",
            "|23:59:59.999999|",
            "|01:02:03.000001|",
            "|NULL           |",
            "+---------------+",
        ]);
        let shown = show(vec![("t", Arc::new(column))], &options(20, 0, false, "UTC"));
        assert_eq!(shown, expected);
    }

    #[test]
    fn null_type() {
        let columns: Vec<(&str, ArrayRef)> =
            vec![("n", Arc::new(NullArray::new(1))), ("i", ints(&[Some(1)]))];
        let expected = lines(&[
            "+----+---+",
            "|   n|  i|",
            "+----+---+",
            "|NULL|  1|",
            "+----+---+",
        ]);
        assert_eq!(show(columns, &options(20, 20, false, "UTC")), expected);
    }
}
