//! DWARF from PTX: assemble the `.section .debug_* { .b8 …; .b64 $L… }`
//! blocks into byte buffers and read the inline tree with `gimli`.
//!
//! Labels are given synthetic addresses (the module-wide index of the
//! instruction they precede), label differences are computed, section names
//! (`.debug_abbrev`) and labels defined inside sections resolve to section
//! offsets. Owns: that assembly and the extraction of inline ranges.
//! Does not own: choosing which frame to report (see the parent module).

use gimli::{EndianSlice, LittleEndian, SectionId};
use rustc_hash::FxHashMap;

/// One `DW_TAG_inlined_subroutine`: the address range it covers and where
/// it was called from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineRange {
    pub lo: u64,
    pub hi: u64,
    pub depth: u32,
    pub call_file: u32,
    pub call_line: u32,
    pub call_col: u32,
    /// The file the inlined function is declared in (`DW_AT_decl_file` of
    /// its abstract origin), when the DWARF says.
    pub callee_file: Option<u32>,
}

struct Assembled {
    bytes: Vec<u8>,
    labels: FxHashMap<String, u64>,
    /// (offset, size, expression) to patch once all section labels are known.
    fixups: Vec<(usize, usize, String)>,
}

/// Assemble the data directives of one section body.
fn assemble(body: &str, code_labels: &FxHashMap<&str, u64>) -> Option<Assembled> {
    let mut a = Assembled { bytes: Vec::with_capacity(body.len() / 4), labels: FxHashMap::default(), fixups: vec![] };
    for raw in body.lines() {
        // (up to a `//` comment: found by its bytes, a pattern searcher per line costs more than the line)
        let end = raw.as_bytes().windows(2).position(|w| w == b"//").unwrap_or(raw.len());
        let line = raw[..end].trim_ascii();
        if line.is_empty() {
            continue;
        }
        if let Some(l) = line.strip_suffix(':') {
            a.labels.insert(l.trim_ascii().to_string(), a.bytes.len() as u64);
            continue;
        }
        let (dir, rest) = line.split_at(line.find(|c: char| c.is_whitespace() || c == '"').unwrap_or(line.len()));
        let size = match dir {
            ".b8" => 1,
            ".b16" => 2,
            ".b32" => 4,
            ".b64" => 8,
            // LLVM writes padding as `.b8N,V` without a space (seen: `.b84,255`)
            d if d.starts_with(".b8") => {
                let n: usize = d[3..].split(',').next()?.parse().ok()?;
                // alignment padding is a few bytes; anything larger is not DWARF we know
                if n > 256 {
                    return None;
                }
                a.bytes.extend(std::iter::repeat_n(0u8, n));
                continue;
            }
            _ => return None,
        };
        let rest = rest.trim_ascii();
        if let Some(s) = rest.strip_prefix('"') {
            let s = s.strip_suffix('"').unwrap_or(s);
            a.bytes.extend_from_slice(s.as_bytes());
            a.bytes.push(0);
            continue;
        }
        for item in rest.split(',') {
            let item = item.trim_ascii();
            if item.is_empty() {
                continue;
            }
            let off = a.bytes.len();
            let v = match eval_expr(item, code_labels, &FxHashMap::default()) {
                Some(v) => v,
                None => {
                    a.fixups.push((off, size, item.to_string()));
                    0
                }
            };
            a.bytes.extend_from_slice(&v.to_le_bytes()[..size]);
        }
    }
    Some(a)
}

fn eval_term(t: &str, code: &FxHashMap<&str, u64>, sect: &FxHashMap<String, u64>) -> Option<u64> {
    let t = t.trim_ascii();
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok();
    }
    if let Ok(v) = t.parse::<i64>() {
        return Some(v as u64);
    }
    if t.starts_with(".debug_") {
        return Some(0);
    }
    code.get(t).copied().or_else(|| sect.get(t).copied())
}

/// `a`, `a+b`, `a-b` over numbers, code labels and section labels.
fn eval_expr(e: &str, code: &FxHashMap<&str, u64>, sect: &FxHashMap<String, u64>) -> Option<u64> {
    let bytes = e.as_bytes();
    let mut acc: u64 = 0;
    let mut sign_add = true;
    let mut start = 0;
    for i in 0..=bytes.len() {
        if i == bytes.len() || (i > start && (bytes[i] == b'+' || bytes[i] == b'-')) {
            let v = eval_term(&e[start..i], code, sect)?;
            acc = if sign_add { acc.wrapping_add(v) } else { acc.wrapping_sub(v) };
            if i < bytes.len() {
                sign_add = bytes[i] == b'+';
            }
            start = i + 1;
        }
    }
    Some(acc)
}

/// Decode inline ranges from the module's DWARF sections. `code_labels`
/// maps code labels to synthetic addresses. `None` when the module has no
/// usable `.debug_info`.
pub fn inline_ranges(sections: &[(&str, &str)], code_labels: &FxHashMap<&str, u64>) -> Option<Vec<InlineRange>> {
    let mut asm: FxHashMap<&str, Assembled> = FxHashMap::default();
    for (name, body) in sections {
        if matches!(
            *name,
            ".debug_info" | ".debug_abbrev" | ".debug_str" | ".debug_ranges" | ".debug_rnglists" | ".debug_addr" | ".debug_str_offsets"
        ) {
            asm.insert(name, assemble(body, code_labels)?);
        }
    }
    // all labels defined inside sections, then patch forward references
    let mut sect_labels: FxHashMap<String, u64> = FxHashMap::default();
    for a in asm.values() {
        sect_labels.extend(a.labels.iter().map(|(k, v)| (k.clone(), *v)));
    }
    for a in asm.values_mut() {
        for (off, size, expr) in std::mem::take(&mut a.fixups) {
            let v = eval_expr(&expr, code_labels, &sect_labels).unwrap_or(0);
            a.bytes[off..off + size].copy_from_slice(&v.to_le_bytes()[..size]);
        }
    }
    asm.get(".debug_info")?;
    let empty: &[u8] = &[];
    let get = |id: SectionId| -> Result<EndianSlice<'_, LittleEndian>, gimli::Error> {
        let b = asm.get(id.name()).map(|a| a.bytes.as_slice()).unwrap_or(empty);
        Ok(EndianSlice::new(b, LittleEndian))
    };
    let dwarf = gimli::Dwarf::load(get).ok()?;
    let mut out = Vec::new();
    // PTX has no `.debug_line` (ptxas builds it from `.loc`), so units are
    // read through their headers, not `gimli::Unit` (which parses the line
    // program eagerly).
    let mut units = dwarf.units();
    loop {
        let header = match units.next() {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(_) => break,
        };
        let Ok(abbrevs) = dwarf.abbreviations(&header) else {
            continue;
        };
        let encoding = header.encoding();
        let mut entries = header.entries(&abbrevs);
        let mut depth: i64 = 0;
        let mut base_addr = 0u64;
        loop {
            let (delta, entry) = match entries.next_dfs() {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(_) => break,
            };
            depth += delta as i64;
            let low = match entry.attr_value(gimli::DW_AT_low_pc) {
                Ok(Some(gimli::AttributeValue::Addr(a))) => Some(a),
                _ => None,
            };
            if entry.tag() == gimli::DW_TAG_compile_unit {
                base_addr = low.unwrap_or(0);
                continue;
            }
            if entry.tag() != gimli::DW_TAG_inlined_subroutine {
                continue;
            }
            let num = |at| match entry.attr_value(at) {
                Ok(Some(gimli::AttributeValue::FileIndex(v))) => v as u32,
                Ok(Some(v)) => v.udata_value().unwrap_or(0) as u32,
                _ => 0,
            };
            let (call_file, call_line, call_col) =
                (num(gimli::DW_AT_call_file), num(gimli::DW_AT_call_line), num(gimli::DW_AT_call_column));
            let callee_file = match entry.attr_value(gimli::DW_AT_abstract_origin) {
                Ok(Some(gimli::AttributeValue::UnitRef(o))) => decl_file(&header, &abbrevs, o, 4),
                _ => None,
            };
            let mut push = |lo: u64, hi: u64| {
                out.push(InlineRange { lo, hi, depth: depth.max(0) as u32, call_file, call_line, call_col, callee_file })
            };
            match (low, entry.attr_value(gimli::DW_AT_high_pc)) {
                (Some(lo), Ok(Some(gimli::AttributeValue::Addr(hi)))) => push(lo, hi),
                (Some(lo), Ok(Some(v))) => push(lo, lo.saturating_add(v.udata_value().unwrap_or(0))),
                _ => {
                    if let Ok(Some(gimli::AttributeValue::RangeListsRef(r))) = entry.attr_value(gimli::DW_AT_ranges) {
                        let off = gimli::RangeListsOffset(r.0);
                        if let Ok(mut it) = dwarf.ranges.raw_ranges(off, encoding) {
                            let mut base = base_addr;
                            while let Ok(Some(e)) = it.next() {
                                match e {
                                    gimli::RawRngListEntry::BaseAddress { addr } => base = addr,
                                    gimli::RawRngListEntry::AddressOrOffsetPair { begin, end }
                                    | gimli::RawRngListEntry::OffsetPair { begin, end } => {
                                        push(base.wrapping_add(begin), base.wrapping_add(end))
                                    }
                                    gimli::RawRngListEntry::StartEnd { begin, end } => push(begin, end),
                                    gimli::RawRngListEntry::StartLength { begin, length } => push(begin, begin.saturating_add(length)),
                                    _ => {}
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Some(out)
}

/// `DW_AT_decl_file` of the entry at `offset`, following
/// `DW_AT_specification`/`DW_AT_abstract_origin` a few hops.
fn decl_file<R: gimli::Reader>(
    header: &gimli::UnitHeader<R>,
    abbrevs: &gimli::Abbreviations,
    offset: gimli::UnitOffset<R::Offset>,
    hops: u32,
) -> Option<u32> {
    let mut cursor = header.entries_at_offset(abbrevs, offset).ok()?;
    let (_, entry) = cursor.next_dfs().ok()??;
    match entry.attr_value(gimli::DW_AT_decl_file).ok()? {
        Some(gimli::AttributeValue::FileIndex(v)) => return Some(v as u32),
        Some(v) => return v.udata_value().map(|x| x as u32),
        None => {}
    }
    if hops == 0 {
        return None;
    }
    for at in [gimli::DW_AT_specification, gimli::DW_AT_abstract_origin] {
        if let Ok(Some(gimli::AttributeValue::UnitRef(o))) = entry.attr_value(at) {
            return decl_file(header, abbrevs, o, hops - 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_arithmetic_and_padding() {
        let code: FxHashMap<&str, u64> = [("$L__a", 10u64), ("$L__b", 14)].into_iter().collect();
        let a = assemble(
            ".b32 7 // a comment\n.b64 $L__b-$L__a\n  // a line of comment\n.b84,255\n.b16 $L__x\n$L__x: //\n.b8 1,2\t//2\n.b8 \"hi\"\n/\n",
            &code,
        );
        // (a lone `/` is not a comment: not a directive we know)
        assert!(a.is_none());
        let a = assemble(
            ".b32 7 // a comment\n.b64 $L__b-$L__a\n  // a line of comment\n.b84,255\n.b16 $L__x\n$L__x: //\n.b8 1,2\t//2\n.b8 \"hi\"\n",
            &code,
        )
        .unwrap();
        assert_eq!(&a.bytes[..4], &[7, 0, 0, 0]);
        assert_eq!(&a.bytes[4..12], &4u64.to_le_bytes());
        assert_eq!(&a.bytes[12..16], &[0, 0, 0, 0]);
        assert_eq!(a.fixups, vec![(16, 2, "$L__x".to_string())]);
        assert_eq!(a.labels["$L__x"], 18);
        assert_eq!(&a.bytes[18..], &[1, 2, b'h', b'i', 0]);
    }

    #[test]
    fn absurd_padding_is_rejected_not_allocated() {
        // found by `cargo fuzz run check`: `.b8333333333363` once allocated 333 GB
        assert!(assemble(".b8333333333363,0\n", &FxHashMap::default()).is_none());
    }
}
