//! The cgroup of each recorded process (`--system`, `--cgroup`): the one it
//! was in at its first probed call (the kernel side notes it, so a process
//! that has exited by the time its records are drained still has one);
//! else, for a child that joined with its parent, `/proc/PID/cgroup` or its
//! parent's. A process moved to another cgroup later keeps the first one.
//! The footer maps the ids to cgroup paths, with the Kubernetes pod uid and
//! container id where the path shows them.
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::{Value, json};

pub struct CgroupTable {
    /// The cgroup2 mount (ids are its directories' inode numbers).
    root: PathBuf,
    /// The kernel side's tgid -> cgroup id (tracer-ebpf/src/select.rs).
    kernel: Option<aya::maps::HashMap<aya::maps::MapData, u32, u64>>,
    /// pid -> cgroup id (None: not known).
    by_pid: HashMap<u32, Option<u64>>,
    /// child -> parent, from fork records.
    parent: HashMap<u32, u32>,
    /// id -> path of every cgroup seen while walking the hierarchy.
    tree: HashMap<u64, String>,
    /// id -> path, every cgroup a recorded line named.
    pub paths: BTreeMap<u64, String>,
}

impl CgroupTable {
    pub fn new(root: PathBuf, kernel: Option<aya::maps::HashMap<aya::maps::MapData, u32, u64>>) -> Self {
        CgroupTable {
            root,
            kernel,
            by_pid: HashMap::new(),
            parent: HashMap::new(),
            tree: HashMap::new(),
            paths: BTreeMap::new(),
        }
    }

    /// Notes a fork (a child's cgroup is its parent's unless known).
    pub fn forked(&mut self, parent: u32, child: u32) {
        self.parent.insert(child, parent);
    }

    /// Forgets `pid` (it exited: its number may come back for another
    /// process). For a long-running caller (`tracer agent`).
    pub fn forget(&mut self, pid: u32) {
        self.by_pid.remove(&pid);
        self.parent.remove(&pid);
    }

    /// The path of a cgroup id [`of`](Self::of) returned.
    pub fn path(&self, id: u64) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    /// The cgroup id of `pid`, looked up once per process.
    pub fn of(&mut self, pid: u32) -> Option<u64> {
        if let Some(&id) = self.by_pid.get(&pid) {
            return id;
        }
        let mut id = self.kernel.as_ref().and_then(|m| m.get(&pid, 0).ok()).or_else(|| self.read_proc(pid));
        if id.is_none()
            && let Some(&pp) = self.parent.get(&pid)
            && pp != pid
        {
            // Recursion ends: each step goes to an older process, and the
            // result is cached before the next lookup of the same pid.
            self.by_pid.insert(pid, None);
            id = self.of(pp);
        }
        if let Some(i) = id {
            self.name(i);
        }
        self.by_pid.insert(pid, id);
        id
    }

    fn read_proc(&mut self, pid: u32) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let path = unified_path(&text)?;
        use std::os::unix::fs::MetadataExt as _;
        let id = std::fs::metadata(self.root.join(path.trim_start_matches('/'))).ok()?.ino();
        self.tree.insert(id, path.to_string());
        Some(id)
    }

    /// Puts `id`'s path in `paths` (walking the hierarchy when it is new).
    fn name(&mut self, id: u64) {
        if self.paths.contains_key(&id) {
            return;
        }
        if !self.tree.contains_key(&id) {
            self.walk();
        }
        let path = self.tree.get(&id).cloned().unwrap_or_else(|| "(removed)".to_string());
        self.paths.insert(id, path);
    }

    /// Learns the id and path of every cgroup in the hierarchy.
    fn walk(&mut self) {
        use std::os::unix::fs::MetadataExt as _;
        let mut stack = vec![(self.root.clone(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            if let Ok(m) = std::fs::metadata(&dir) {
                self.tree.insert(m.ino(), if rel.is_empty() { "/".to_string() } else { rel.clone() });
            }
            let Ok(rd) = std::fs::read_dir(&dir) else { continue };
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), format!("{rel}/{}", e.file_name().to_string_lossy())));
                }
            }
        }
    }

    /// The footer's `cgroups`: id -> {path, pod_uid, container_id}.
    pub fn footer(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (id, path) in &self.paths {
            let mut v = json!({ "path": path });
            describe_into(path, &mut v);
            m.insert(id.to_string(), v);
        }
        Value::Object(m)
    }
}

/// Writes a line with its process's cgroup id (`"cgroup":ID`, null when the
/// process was gone before tracer could read it).
pub fn write_tagged(
    t: &mut CgroupTable,
    w: &mut crate::collect::writer::TraceWriter,
    l: &mut crate::decode::fastline::Line,
) {
    use crate::decode::fastline::Line;
    let pid = match l {
        Line::Launch(x) => Some(x.hdr.pid),
        Line::Call(x) => Some(x.hdr.pid),
        Line::Value(v) => v.get("pid").and_then(Value::as_u64).map(|p| p as u32),
    };
    let Some(pid) = pid else { return w.write_line(l) };
    let id = t.of(pid);
    match l {
        Line::Value(v) => {
            v["cgroup"] = json!(id);
            w.write(v)
        }
        _ => match id {
            Some(id) => w.write_line_tagged(l, format!(",\"cgroup\":{id}").as_bytes()),
            None => w.write_line_tagged(l, b",\"cgroup\":null"),
        },
    }
}

/// The cgroup v2 path in a `/proc/PID/cgroup` text (the `0::PATH` line).
pub fn unified_path(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// Adds `pod_uid` and `container_id` (and the container runtime) to `v`
/// when `path` shows them.
pub fn describe_into(path: &str, v: &mut Value) {
    let k = kube_ids(path);
    if let Some(p) = k.pod_uid {
        v["pod_uid"] = json!(p);
    }
    if let Some(c) = k.container_id {
        v["container_id"] = json!(c);
    }
    if let Some(r) = k.runtime {
        v["runtime"] = json!(r);
    }
}

/// What a cgroup path tells about Kubernetes and containers.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KubeIds {
    pub pod_uid: Option<String>,
    pub container_id: Option<String>,
    /// The runtime prefix of a systemd scope (`cri-containerd`, `crio`,
    /// `docker`), when the path names one.
    pub runtime: Option<String>,
}

/// Pod uid and container id from a cgroup path, in both drivers' forms:
/// systemd (`/kubepods.slice/kubepods-burstable.slice/
/// kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope`) and
/// cgroupfs (`/kubepods/burstable/pod<uid>/<id>`); a plain Docker or Podman
/// container (`/system.slice/docker-<id>.scope`, `/docker/<id>`) gives the
/// container id alone.
pub fn kube_ids(path: &str) -> KubeIds {
    let mut k = KubeIds::default();
    let mut in_kubepods = false;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if part == "kubepods" || part.starts_with("kubepods.") || part.starts_with("kubepods-") {
            in_kubepods = true;
        }
        if let Some(stem) = part.strip_suffix(".slice") {
            // kubepods-pod<uid>.slice, kubepods-<qos>-pod<uid>.slice
            if stem.starts_with("kubepods")
                && let Some((_, uid)) = stem.rsplit_once("-pod")
                && is_uid(&uid.replace('_', "-"))
            {
                k.pod_uid = Some(uid.replace('_', "-"));
            }
        } else if let Some(stem) = part.strip_suffix(".scope") {
            // cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope
            if let Some((runtime, id)) = stem.rsplit_once('-')
                && is_container_id(id)
            {
                k.container_id = Some(id.to_string());
                k.runtime = Some(runtime.to_string());
            }
        } else if in_kubepods && let Some(uid) = part.strip_prefix("pod") {
            if is_uid(uid) {
                k.pod_uid = Some(uid.to_string());
            }
        } else if is_container_id(part) {
            // cgroupfs: /kubepods/<qos>/pod<uid>/<id>, /docker/<id>
            k.container_id = Some(part.to_string());
        }
    }
    k
}

/// A pod uid: 8-4-4-4-12 hex digits.
fn is_uid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A container id: 64 hex digits.
fn is_container_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    const CID: &str = "4c8ce2f1a0b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3";

    fn ids(r: Option<&str>) -> KubeIds {
        KubeIds { pod_uid: Some(UID.into()), container_id: Some(CID.into()), runtime: r.map(String::from) }
    }

    #[test]
    fn systemd_driver_paths() {
        let u = UID.replace('-', "_");
        let p = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{CID}.scope"
        );
        assert_eq!(kube_ids(&p), ids(Some("cri-containerd")));
        let p = format!("/kubepods.slice/kubepods-pod{u}.slice/crio-{CID}.scope");
        assert_eq!(kube_ids(&p), ids(Some("crio")));
        let p =
            format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice/docker-{CID}.scope");
        assert_eq!(kube_ids(&p), ids(Some("docker")));
        // The pod's own cgroup: a uid, no container.
        let p = format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice");
        assert_eq!(kube_ids(&p), KubeIds { pod_uid: Some(UID.into()), ..Default::default() });
    }

    #[test]
    fn cgroupfs_driver_paths() {
        let p = format!("/kubepods/burstable/pod{UID}/{CID}");
        assert_eq!(kube_ids(&p), ids(None));
        let p = format!("/kubepods/pod{UID}/{CID}");
        assert_eq!(kube_ids(&p), ids(None));
    }

    #[test]
    fn plain_containers_and_other_paths() {
        let p = format!("/system.slice/docker-{CID}.scope");
        assert_eq!(
            kube_ids(&p),
            KubeIds { container_id: Some(CID.into()), runtime: Some("docker".into()), ..Default::default() }
        );
        assert_eq!(
            kube_ids(&format!("/docker/{CID}")),
            KubeIds { container_id: Some(CID.into()), ..Default::default() }
        );
        for p in ["/", "/user.slice/user-0.slice/session-3.scope", "/system.slice/ssh.service", "/podman/pod123"] {
            assert_eq!(kube_ids(p), KubeIds::default(), "{p}");
        }
        // "pod" outside kubepods is not a pod; a short hex name is no container.
        assert_eq!(kube_ids(&format!("/x/pod{UID}/abc")), KubeIds::default());
    }

    #[test]
    fn unified_line_of_proc_cgroup() {
        assert_eq!(unified_path("0::/kubepods.slice/x.scope\n"), Some("/kubepods.slice/x.scope"));
        assert_eq!(unified_path("12:memory:/docker/abc\n0::/\n"), Some("/"));
        assert_eq!(unified_path("12:memory:/docker/abc\n"), None);
    }

    #[test]
    fn footer_names_ids() {
        let mut t = CgroupTable::new(PathBuf::from("/sys/fs/cgroup"), None);
        t.paths.insert(7, format!("/kubepods/pod{UID}/{CID}"));
        t.paths.insert(3, "/user.slice".into());
        assert_eq!(
            t.footer(),
            json!({ "3": { "path": "/user.slice" }, "7": { "path": format!("/kubepods/pod{UID}/{CID}"), "pod_uid": UID, "container_id": CID } })
        );
    }
}
