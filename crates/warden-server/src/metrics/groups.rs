//! Lock groups: the bounded `group` label of the lock-side series.
//!
//! A resource's group is the longest prefix of `--metrics-groups` it starts
//! with; an election's (`warden_core::limits::ELECTION_PREFIX`) is
//! `election`; any other resource's is `other`. The list is configuration,
//! the same on every node and across restarts, so a resource counts under
//! the same label everywhere (first-come slots would differ between nodes
//! and after a restart), and a million resources make at most
//! [`MAX_METRICS_GROUPS`] + 2 label values.

use warden_core::limits::{ELECTION_PREFIX, MAX_RESOURCE_BYTES};

/// Most prefixes `--metrics-groups` takes.
pub const MAX_METRICS_GROUPS: usize = 64;

/// The label of a resource that matches no configured prefix.
pub const OTHER: &str = "other";

/// The label of every election's resource.
pub const ELECTION: &str = "election";

/// Why a `--metrics-groups` list was refused (each names the limit; the
/// caller names the flag or the config key).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GroupsError {
    /// More than [`MAX_METRICS_GROUPS`] prefixes.
    #[error("at most {MAX_METRICS_GROUPS} prefixes; got {0}")]
    TooMany(usize),
    /// An empty prefix (it would match every resource).
    #[error("prefix {0} is empty (it would match every resource)")]
    Empty(usize),
    /// A prefix longer than a resource name may be.
    #[error("prefix {index} is {len} bytes; at most {MAX_RESOURCE_BYTES}")]
    TooLong {
        /// 1-based position in the list.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// A prefix given twice.
    #[error("{0:?} is given twice")]
    Duplicate(String),
    /// A prefix equal to a built-in label, which would make the label ambiguous.
    #[error("{0:?} is a built-in group label (\"other\", \"election\"); use another prefix")]
    Reserved(String),
    /// A prefix with a control character (it would be a label value).
    #[error("prefix {0} has a control character")]
    Control(usize),
}

/// The configured groups; see the module docs. Index 0 is `other`, 1 is
/// `election`, then the configured prefixes in the order given.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    /// (prefix, index into [`Groups::labels`]), longest prefix first.
    by_length: Vec<(String, usize)>,
    configured: Vec<String>,
}

impl Groups {
    /// Checks and takes `prefixes` (`--metrics-groups`).
    ///
    /// # Errors
    /// [`GroupsError`] naming the flag and the limit; nothing is taken.
    pub fn new(prefixes: &[String]) -> Result<Self, GroupsError> {
        if prefixes.len() > MAX_METRICS_GROUPS {
            return Err(GroupsError::TooMany(prefixes.len()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in prefixes.iter().enumerate() {
            let index = i + 1;
            if p.is_empty() {
                return Err(GroupsError::Empty(index));
            }
            if p.len() > MAX_RESOURCE_BYTES {
                return Err(GroupsError::TooLong {
                    index,
                    len: p.len(),
                });
            }
            if p.chars().any(char::is_control) {
                return Err(GroupsError::Control(index));
            }
            if p == OTHER || p == ELECTION {
                return Err(GroupsError::Reserved(p.clone()));
            }
            if !seen.insert(p.as_str()) {
                return Err(GroupsError::Duplicate(p.clone()));
            }
        }
        let mut by_length: Vec<(String, usize)> = prefixes
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i + 2))
            .collect();
        by_length.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Ok(Groups {
            by_length,
            configured: prefixes.to_vec(),
        })
    }

    /// Every label value, by index: `other`, `election`, then the prefixes.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        [OTHER, ELECTION]
            .into_iter()
            .chain(self.configured.iter().map(String::as_str))
    }

    /// How many label values there are.
    pub fn len(&self) -> usize {
        self.configured.len() + 2
    }

    /// Never true: `other` and `election` always exist.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The index of `resource`'s group (see the module docs).
    pub fn of(&self, resource: &str) -> usize {
        if resource.starts_with(ELECTION_PREFIX) {
            return 1;
        }
        self.by_length
            .iter()
            .find(|(p, _)| resource.starts_with(p.as_str()))
            .map_or(0, |(_, i)| *i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(list: &[&str]) -> Result<Groups, GroupsError> {
        Groups::new(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    // Bounded cardinality: the longest configured prefix wins, elections are
    // `election`, the rest `other`; nothing else is ever a label.
    #[test]
    fn longest_prefix_else_other() {
        let g = groups(&["payments/", "payments/eu/", "inventory/"]).unwrap();
        let labels: Vec<&str> = g.labels().collect();
        assert_eq!(
            labels,
            [
                "other",
                "election",
                "payments/",
                "payments/eu/",
                "inventory/"
            ]
        );
        assert_eq!(labels[g.of("payments/eu/42")], "payments/eu/");
        assert_eq!(labels[g.of("payments/us/1")], "payments/");
        assert_eq!(labels[g.of("inventory/x")], "inventory/");
        assert_eq!(labels[g.of("orders/1")], "other");
        assert_eq!(
            labels[g.of(&format!("{ELECTION_PREFIX}leader"))],
            "election"
        );
        assert_eq!(g.len(), 5);
    }

    // "What bad input gets": each refusal names the flag and the limit.
    #[test]
    fn bad_lists_are_refused_with_the_limit() {
        let many: Vec<String> = (0..=MAX_METRICS_GROUPS).map(|i| format!("g{i}/")).collect();
        let err = Groups::new(&many).unwrap_err();
        assert_eq!(err, GroupsError::TooMany(MAX_METRICS_GROUPS + 1));
        assert!(err.to_string().contains("at most 64"), "{err}");
        assert_eq!(groups(&["a/", ""]).unwrap_err(), GroupsError::Empty(2));
        assert_eq!(
            groups(&["a/", "a/"]).unwrap_err(),
            GroupsError::Duplicate("a/".into())
        );
        assert_eq!(
            groups(&["other"]).unwrap_err(),
            GroupsError::Reserved("other".into())
        );
        assert_eq!(groups(&["a\n"]).unwrap_err(), GroupsError::Control(1));
        let long = "x".repeat(MAX_RESOURCE_BYTES + 1);
        assert!(matches!(
            Groups::new(&[long]).unwrap_err(),
            GroupsError::TooLong { index: 1, .. }
        ));
    }
}
