//! PTX text: `.entry` kernels and their `.param` declarations, with the
//! offsets the CUDA ABI gives them in the parameter buffer (each parameter
//! aligned to its alignment, the buffer ending with the last parameter).

use serde::Serialize;

use super::error::{ImageError, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PtxParam {
    pub ordinal: u32,
    pub name: String,
    /// Element type, e.g. `.u64`, `.b8`.
    pub ty: String,
    pub offset: u32,
    pub size: u32,
    pub align: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_len: Option<u32>,
    /// `.ptr` state space for pointer parameters (`.global`, ...), if declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptr_space: Option<String>,
    /// `.ptr ... .align N`: alignment of the memory the pointer points to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptr_align: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PtxKernel {
    pub name: String,
    pub params: Vec<PtxParam>,
    pub param_size: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maxntid: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reqntid: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minnctapersm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maxnreg: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PtxModule {
    pub version: Option<String>,
    pub target: Option<String>,
    pub address_size: Option<u32>,
    pub kernels: Vec<PtxKernel>,
}

/// Largest parameter size accepted (CUDA allows 32764 bytes).
const MAX_PARAM_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Tok<'a> {
    text: &'a str,
    at: usize,
}

/// Splits PTX into tokens, dropping comments. Punctuation `(),[];{}` are
/// tokens of their own.
fn tokenize(s: &str) -> Vec<Tok<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i = (i + 2).min(b.len());
        } else if c == b'"' {
            let st = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            i = (i + 1).min(b.len());
            out.push(Tok { text: &s[st..i], at: st });
        } else if b"(),[];{}".contains(&c) {
            out.push(Tok { text: &s[i..i + 1], at: i });
            i += 1;
        } else {
            let st = i;
            while i < b.len() && !b[i].is_ascii_whitespace() && !b"(),[];{}\"".contains(&b[i]) {
                if b[i] == b'/' && matches!(b.get(i + 1), Some(b'/') | Some(b'*')) {
                    break;
                }
                i += 1;
            }
            if i == st {
                i += 1; // a lone byte that is not ASCII-significant
                continue;
            }
            out.push(Tok { text: &s[st..i], at: st });
        }
    }
    out
}

/// Size of a PTX fundamental type in bytes.
fn type_size(t: &str) -> Option<u32> {
    Some(match t {
        ".b8" | ".u8" | ".s8" | ".pred" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" | ".tf32" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

fn parse_u32(t: &Tok<'_>, what: &str) -> Result<u32> {
    let s = t.text;
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    };
    v.ok_or_else(|| ImageError::new(t.at as u64, format!("{what}: `{s}` is not a number")))
}

/// Parses PTX text (bytes up to the first NUL, as drivers read it).
pub fn parse_ptx(bytes: &[u8]) -> Result<PtxModule> {
    let bytes = bytes.split(|&c| c == 0).next().unwrap_or(&[]);
    let text = std::str::from_utf8(bytes)
        .map_err(|e| ImageError::new(e.valid_up_to() as u64, "PTX is not valid UTF-8 text"))?;
    let toks = tokenize(text);
    let mut m = PtxModule { version: None, target: None, address_size: None, kernels: Vec::new() };
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match t.text {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            ".version" if depth == 0 => m.version = toks.get(i + 1).map(|t| t.text.to_owned()),
            ".target" if depth == 0 => {
                let mut v = Vec::new();
                let mut j = i + 1;
                while let Some(t) = toks.get(j) {
                    if t.text.starts_with('.') || t.text == "{" {
                        break;
                    }
                    if t.text != "," {
                        v.push(t.text);
                    }
                    j += 1;
                }
                m.target = Some(v.join(","));
            }
            ".address_size" if depth == 0 => {
                if let Some(n) = toks.get(i + 1) {
                    m.address_size = Some(parse_u32(n, ".address_size")?);
                }
            }
            ".entry" if depth == 0 => {
                let (k, next) = parse_entry(&toks, i)?;
                m.kernels.push(k);
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(m)
}

/// Parses `.entry NAME ( params ) directives` starting at token `i`
/// (`.entry`). Returns the kernel and the index of the token after the
/// directives (the body's `{`, or `;` for a declaration).
fn parse_entry(toks: &[Tok<'_>], i: usize) -> Result<(PtxKernel, usize)> {
    let at = toks[i].at as u64;
    let name = toks
        .get(i + 1)
        .filter(|t| !t.text.starts_with(['(', '{', ';']))
        .ok_or_else(|| ImageError::new(at, ".entry without a name"))?;
    let mut k = PtxKernel {
        name: name.text.to_owned(),
        params: Vec::new(),
        param_size: 0,
        maxntid: None,
        reqntid: None,
        minnctapersm: None,
        maxnreg: None,
    };
    let mut j = i + 2;
    if toks.get(j).map(|t| t.text) == Some("(") {
        j += 1;
        let mut cursor: u64 = 0;
        loop {
            let Some(t) = toks.get(j) else {
                return Err(ImageError::new(at, format!(".entry {}: parameter list not closed", k.name)));
            };
            match t.text {
                ")" => {
                    j += 1;
                    break;
                }
                "," => j += 1,
                ".param" => {
                    let (p, next) = parse_param(toks, j, k.params.len() as u32, &mut cursor, &k.name)?;
                    k.params.push(p);
                    j = next;
                }
                other => {
                    return Err(ImageError::new(
                        t.at as u64,
                        format!(".entry {}: `{other}` where a .param declaration was expected", k.name),
                    ));
                }
            }
        }
        k.param_size = cursor as u32;
    }
    // Performance directives up to the body or the end of the declaration.
    while let Some(t) = toks.get(j) {
        match t.text {
            "{" | ";" => break,
            ".maxntid" | ".reqntid" => {
                let mut v = Vec::new();
                j += 1;
                while let Some(n) = toks.get(j) {
                    if n.text == "," {
                        j += 1;
                        continue;
                    }
                    if n.text.starts_with('.') || n.text == "{" || n.text == ";" || v.len() == 3 {
                        break;
                    }
                    v.push(parse_u32(n, t.text)?);
                    j += 1;
                }
                if t.text == ".maxntid" {
                    k.maxntid = Some(v);
                } else {
                    k.reqntid = Some(v);
                }
                continue;
            }
            ".minnctapersm" | ".maxnreg" => {
                let n = toks
                    .get(j + 1)
                    .ok_or_else(|| ImageError::new(t.at as u64, format!("{} without a value", t.text)))?;
                let v = parse_u32(n, t.text)?;
                if t.text == ".minnctapersm" {
                    k.minnctapersm = Some(v);
                } else {
                    k.maxnreg = Some(v);
                }
                j += 2;
                continue;
            }
            _ => j += 1,
        }
    }
    Ok((k, j))
}

fn parse_param(
    toks: &[Tok<'_>],
    start: usize,
    ordinal: u32,
    cursor: &mut u64,
    kernel: &str,
) -> Result<(PtxParam, usize)> {
    let at = toks[start].at as u64;
    let mut j = start + 1;
    let mut align: Option<u32> = None;
    let mut ty: Option<&str> = None;
    let mut ptr_space = None;
    let mut is_ptr = false;
    let mut ptr_align = None;
    let mut name = None;
    let mut array_len = None;
    while let Some(t) = toks.get(j) {
        match t.text {
            "," | ")" => break,
            ".align" => {
                let n = toks.get(j + 1).ok_or_else(|| ImageError::new(t.at as u64, ".align without a value"))?;
                let a = parse_u32(n, ".align")?;
                if !a.is_power_of_two() {
                    return Err(ImageError::new(n.at as u64, format!(".align {a} is not a power of two")));
                }
                // After `.ptr` it is the pointee's alignment, not the parameter's.
                if is_ptr {
                    ptr_align = Some(a);
                } else {
                    align = Some(a);
                }
                j += 2;
                continue;
            }
            ".ptr" => is_ptr = true,
            ".global" | ".const" | ".shared" | ".local" => ptr_space = Some(t.text.to_owned()),
            "[" => {
                let n = toks.get(j + 1).ok_or_else(|| ImageError::new(t.at as u64, "array size missing"))?;
                array_len = Some(parse_u32(n, "array size")?);
                if toks.get(j + 2).map(|t| t.text) != Some("]") {
                    return Err(ImageError::new(n.at as u64, "`]` expected after the array size"));
                }
                j += 3;
                continue;
            }
            s if type_size(s).is_some() => ty = Some(s),
            s if s.starts_with('.') => {
                return Err(ImageError::new(
                    t.at as u64,
                    format!(".entry {kernel}: parameter {ordinal}: unknown qualifier or type `{s}`"),
                ));
            }
            s => name = Some(s.to_owned()),
        }
        j += 1;
    }
    let ty = ty.ok_or_else(|| ImageError::new(at, format!(".entry {kernel}: parameter {ordinal} has no type")))?;
    let elem = type_size(ty).unwrap_or(1);
    let align = align.unwrap_or(elem);
    let size = elem as u64 * array_len.unwrap_or(1) as u64;
    let offset = cursor.div_ceil(align as u64) * align as u64;
    let end = offset + size;
    if end > MAX_PARAM_BYTES {
        return Err(ImageError::new(
            at,
            format!(".entry {kernel}: parameters end at {end} bytes, over the {MAX_PARAM_BYTES}-byte limit"),
        ));
    }
    *cursor = end;
    Ok((
        PtxParam {
            ordinal,
            name: name.unwrap_or_default(),
            ty: ty.to_owned(),
            offset: offset as u32,
            size: size as u32,
            align,
            array_len,
            ptr_space,
            ptr_align,
        },
        j,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_params_and_directives() {
        let src = "// comment .entry fake(\n.version 9.0\n.target sm_90, debug\n.address_size 64\n\
            .visible .entry k(\n\t.param .u8 k_param_0,\n\t.param .align 8 .b8 k_param_1[24], /* c */\n\
            \t.param .u64 .ptr .global .align 4 k_param_2\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n{\n ret;\n}\n\
            .entry empty()\n{\n}\n.visible .func f(.param .b32 x) {}\n";
        let m = parse_ptx(src.as_bytes()).unwrap();
        assert_eq!(m.version.as_deref(), Some("9.0"));
        assert_eq!(m.target.as_deref(), Some("sm_90,debug"));
        assert_eq!(m.address_size, Some(64));
        assert_eq!(m.kernels.len(), 2);
        let k = &m.kernels[0];
        assert_eq!(k.name, "k");
        let lay: Vec<_> = k.params.iter().map(|p| (p.offset, p.size, p.align)).collect();
        assert_eq!(lay, vec![(0, 1, 1), (8, 24, 8), (32, 8, 8)]);
        assert_eq!(k.params[2].ptr_space.as_deref(), Some(".global"));
        assert_eq!(k.params[2].ptr_align, Some(4));
        assert_eq!(k.param_size, 40);
        assert_eq!(k.maxntid, Some(vec![256, 1, 1]));
        assert_eq!(k.minnctapersm, Some(2));
        assert_eq!(m.kernels[1].name, "empty");
        assert!(m.kernels[1].params.is_empty());
    }

    #[test]
    fn errors_point_at_the_token() {
        let src = ".entry k(.param .u32 a, .param .bogus b)";
        let e = parse_ptx(src.as_bytes()).unwrap_err();
        assert_eq!(e.offset, src.find(".bogus").unwrap() as u64);
        assert!(e.what.contains("unknown qualifier or type `.bogus`"), "{e}");
        let e = parse_ptx(b".entry k(.param .u32 a").unwrap_err();
        assert!(e.what.contains("not closed"), "{e}");
        let e = parse_ptx(b".entry k(.param .b8 a[99999999])").unwrap_err();
        assert!(e.what.contains("over the"), "{e}");
    }
}
