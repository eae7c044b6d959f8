//! The `[package.metadata.gpucheck]` table of a kernel package: its keys
//! (`block`, `grid`, `args`, `assume`, `shared_bytes`, `kernels.NAME.{block,
//! grid, args, assume, shared_bytes}`, `lints`),
//! the types of their values, and the checks cargo's own `[lints]` makes:
//! a value of the wrong type is an error naming the file and the key, an
//! unknown key is a warning naming the closest known one, a kernel table
//! for a kernel the PTX does not have is a warning.
//!
//! Owns: reading launch shapes from the table and validating it. Does not
//! own: lint levels (`levels`) or argument values (`confirm::launch`).

use gpucheck_analysis::lints::registry::closest_among;
use serde_json::Value;

const PACKAGE_KEYS: &[&str] = &["block", "grid", "args", "assume", "shared_bytes", "kernels", "lints", "build-script"];
const KERNEL_KEYS: &[&str] = &["block", "grid", "args", "assume", "shared_bytes"];

/// `assume = { n = 1000, … }`: the values a kernel is launched with for its
/// scalar parameters (by Rust or PTX name, or index), integers.
pub fn assume(v: &Value) -> Result<Vec<(String, i64)>, String> {
    let obj = v.as_object().ok_or_else(|| format!("expected a table such as `assume = {{ n = 1000 }}`, found `{v}`"))?;
    obj.iter()
        .map(|(k, x)| {
            let n = x.as_i64().or_else(|| x.as_str().and_then(|s| s.trim().parse().ok()));
            n.map(|n| (k.clone(), n)).ok_or_else(|| format!("`{k} = {x}` in `assume`: expected an integer"))
        })
        .collect()
}

/// `[x, y, z]`, `[x, y]`, `[x]` or `x`: 1 to 3 positive integers.
pub fn dims(v: &Value, what: &str) -> Result<[u32; 3], String> {
    let items: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        Value::Number(_) => vec![v],
        _ => return Err(format!("expected `{what} = [x, y, z]` (1 to 3 positive integers), found `{v}`")),
    };
    if items.is_empty() || items.len() > 3 {
        return Err(format!("expected `{what} = [x, y, z]` (1 to 3 positive integers), found {} numbers", items.len()));
    }
    let mut d = [1u32; 3];
    for (i, x) in items.iter().enumerate() {
        let n = x.as_u64().ok_or_else(|| format!("`{x}` in `{what}` is not a positive integer"))?;
        if n == 0 {
            return Err(format!("`{what}` dimensions must be at least 1, found 0"));
        }
        d[i] = u32::try_from(n).map_err(|_| format!("`{n}` is too large for `{what}`"))?;
    }
    Ok(d)
}

/// A block shape: [`dims`] with at most 1024 threads.
pub fn block(v: &Value) -> Result<[u32; 3], String> {
    let b = dims(v, "block")?;
    let total: u64 = b.iter().map(|&x| x as u64).product();
    if total > 1024 {
        return Err(format!("a block has at most 1024 threads; {}×{}×{} = {total}", b[0], b[1], b[2]));
    }
    Ok(b)
}

/// `shared_bytes = N`: the dynamic shared memory a launch gives (1 to
/// what a block can have).
pub fn shared_bytes(v: &Value) -> Result<u32, String> {
    let max = gpucheck_analysis::interp::MAX_SHARED_BYTES;
    match v.as_u64() {
        Some(n) if (1..=max).contains(&n) => Ok(n as u32),
        Some(n) => Err(format!("`shared_bytes = {n}`: a block has from 1 to {max} bytes of shared memory")),
        None => Err(format!("expected `shared_bytes = N` (the bytes of dynamic shared memory a launch gives), found `{v}`")),
    }
}

/// Check the table's keys and the types of their values: the warnings
/// (unknown keys), or the first error.
pub fn validate(gm: &Value, manifest: &str) -> Result<Vec<String>, String> {
    let at = |table: &str| format!("`[{table}]` of {manifest}");
    let Some(obj) = gm.as_object() else {
        return Err(format!("`gpucheck = {gm}` in `[package.metadata]` of {manifest}: expected a table (`[package.metadata.gpucheck]`)"));
    };
    let mut warnings = Vec::new();
    let unknown = |key: &str, known: &[&str], table: &str| {
        let hint = closest_among(key, known.iter().copied()).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
        format!("unknown key `{key}` in {}{hint} (known: {})", at(table), known.join(", "))
    };
    let shapes = |t: &serde_json::Map<String, Value>, table: &str| -> Result<(), String> {
        if let Some(b) = t.get("block") {
            block(b).map_err(|e| format!("{e} in {}", at(table)))?;
        }
        if let Some(g) = t.get("grid") {
            dims(g, "grid").map_err(|e| format!("{e} in {}", at(table)))?;
        }
        if let Some(a) = t.get("args") {
            if !a.is_object() {
                return Err(format!("`args = {a}` in {}: expected a table such as `{{ x = \"f32[1024]\", n = \"1024\" }}`", at(table)));
            }
        }
        if let Some(a) = t.get("assume") {
            assume(a).map_err(|e| format!("{e} in {}", at(table)))?;
        }
        if let Some(b) = t.get("shared_bytes") {
            shared_bytes(b).map_err(|e| format!("{e} in {}", at(table)))?;
        }
        Ok(())
    };
    const TABLE: &str = "package.metadata.gpucheck";
    for k in obj.keys().filter(|k| !PACKAGE_KEYS.contains(&k.as_str())) {
        warnings.push(unknown(k, PACKAGE_KEYS, TABLE));
    }
    shapes(obj, TABLE)?;
    if let Some(b) = obj.get("build-script").filter(|b| !b.is_boolean()) {
        return Err(format!(
            "`build-script = {b}` in {}: expected `true` (check the PTX this package's build script writes) or `false` (leave it out)",
            at(TABLE)
        ));
    }
    if let Some(l) = obj.get("lints") {
        if !l.is_object() {
            return Err(format!("`lints = {l}` in {}: expected a table such as `[package.metadata.gpucheck.lints]`", at(TABLE)));
        }
    }
    if let Some(ks) = obj.get("kernels") {
        let ks = ks.as_object().ok_or_else(|| {
            format!("`kernels = {ks}` in {}: expected one table per kernel, such as `[package.metadata.gpucheck.kernels.NAME]`", at(TABLE))
        })?;
        for (name, k) in ks {
            let table = format!("{TABLE}.kernels.{name}");
            let k = k
                .as_object()
                .ok_or_else(|| format!("`{name} = {k}` in {}: expected a table (`[{table}]`)", at(&format!("{TABLE}.kernels"))))?;
            for key in k.keys().filter(|key| !KERNEL_KEYS.contains(&key.as_str())) {
                warnings.push(unknown(key, KERNEL_KEYS, &table));
            }
            shapes(k, &table)?;
        }
    }
    Ok(warnings)
}

/// Kernel tables naming no kernel of the PTX (`names`: mangled and
/// demangled names of its kernels), as warnings.
/// One unit's part in [`unknown_kernels_by_package`]: its package's
/// manifest (as shown) and table, and the kernel names of its PTX.
pub struct UnitKernels<'a> {
    pub manifest: String,
    pub meta: Option<&'a Value>,
    pub names: Vec<String>,
}

/// [`unknown_kernels`] once per package, against the kernels of all its
/// units (a build script writes several PTX files): each warning with the
/// index of the package's first unit.
pub fn unknown_kernels_by_package(units: &[UnitKernels<'_>]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, u) in units.iter().enumerate() {
        if units[..i].iter().any(|v| v.manifest == u.manifest) {
            continue;
        }
        let names: Vec<String> = units.iter().filter(|v| v.manifest == u.manifest).flat_map(|v| v.names.iter().cloned()).collect();
        out.extend(unknown_kernels(u.meta, &u.manifest, &names).into_iter().map(|w| (i, w)));
    }
    out
}

pub fn unknown_kernels(gm: Option<&Value>, manifest: &str, names: &[String]) -> Vec<String> {
    let Some(ks) = gm.and_then(|g| g.get("kernels")).and_then(Value::as_object) else { return vec![] };
    ks.keys()
        .filter(|k| !names.iter().any(|n| n == *k))
        .map(|k| {
            let hint = closest_among(k, names.iter().map(String::as_str)).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
            format!("`[package.metadata.gpucheck.kernels.{k}]` in {manifest} names no kernel of the package{hint}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_and_types() {
        assert_eq!(block(&json!([32, 8])), Ok([32, 8, 1]));
        assert_eq!(block(&json!(256)), Ok([256, 1, 1]));
        assert_eq!(block(&json!([256, 1.5, 1])), Err("`1.5` in `block` is not a positive integer".to_string()));
        assert!(block(&json!([64, 64])).unwrap_err().contains("at most 1024 threads"));
        assert!(dims(&json!([0]), "grid").unwrap_err().contains("at least 1"));
        assert!(dims(&json!("8"), "grid").unwrap_err().contains("expected `grid = [x, y, z]`"));
    }

    #[test]
    fn validation() {
        let w = validate(&json!({"blok": [32], "kernels": {"k": {"gird": [2]}}}), "Cargo.toml").unwrap();
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("unknown key `blok` in `[package.metadata.gpucheck]` of Cargo.toml; did you mean `block`?"), "{}", w[0]);
        assert!(
            w[1].starts_with("unknown key `gird` in `[package.metadata.gpucheck.kernels.k]` of Cargo.toml; did you mean `grid`?"),
            "{}",
            w[1]
        );
        assert!(validate(&json!(5), "Cargo.toml")
            .unwrap_err()
            .contains("`gpucheck = 5` in `[package.metadata]` of Cargo.toml: expected a table"));
        assert!(validate(&json!({"kernels": 3}), "Cargo.toml").unwrap_err().contains("`kernels = 3`"));
        assert!(validate(&json!({"block": [256, 1.5, 1]}), "Cargo.toml")
            .unwrap_err()
            .contains("`1.5` in `block` is not a positive integer"));
        assert!(validate(&json!({"args": "x"}), "Cargo.toml").unwrap_err().contains("`args = \"x\"`"));
        assert_eq!(assume(&json!({"n": 1000, "c": "768"})), Ok(vec![("c".to_string(), 768), ("n".to_string(), 1000)]));
        assert!(validate(&json!({"kernels": {"k": {"assume": {"n": "many"}}}}), "Cargo.toml")
            .unwrap_err()
            .contains("`n = \"many\"` in `assume`: expected an integer in `[package.metadata.gpucheck.kernels.k]`"));
        let names = vec!["saxpy".to_string(), "transpose".to_string()];
        let u = unknown_kernels(Some(&json!({"kernels": {"saxpy": {}, "saxyp": {}}})), "Cargo.toml", &names);
        assert_eq!(u, ["`[package.metadata.gpucheck.kernels.saxyp]` in Cargo.toml names no kernel of the package; did you mean `saxpy`?"]);
    }
}
