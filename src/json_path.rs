//! JSON paths in error messages: the path `serde_path_to_error` reports for a bad value, and
//! the `at PATH: ` prefix the settings and scenario errors put before their message.

/// The path of the value an error is about, empty at the root (where the library says `.`).
pub(crate) fn of<E>(error: &serde_path_to_error::Error<E>) -> String {
    let path = error.path().to_string();
    if path == "." { String::new() } else { path }
}

/// `at PATH: ` before an error message, or nothing for the root.
pub(crate) fn at(path: &str) -> String {
    if path.is_empty() { String::new() } else { format!("at {path}: ") }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_root_has_no_path_and_no_prefix() {
        let root = serde_path_to_error::deserialize::<_, u8>(serde_json::json!("x")).unwrap_err();
        assert_eq!(super::of(&root), "");
        let inner = serde_path_to_error::deserialize::<_, Vec<u8>>(serde_json::json!([1, "x"])).unwrap_err();
        assert_eq!(super::of(&inner), "[1]");
        assert_eq!(super::at(""), "");
        assert_eq!(super::at("hooks.Stop[0]"), "at hooks.Stop[0]: ");
    }
}
