//! deploy/ holds what runs osmeter on a fleet. These tests check what can go wrong unseen: every YAML
//! file parses, every Kubernetes manifest holds to the Kubernetes API's schema (scripts/k8s-validate),
//! each workload runs `osmeter run` with the store taken from the Secret and the privileges
//! counters need, and the Ansible plays have hosts and tasks and read the store from the
//! environment. The playbook run against real hosts is scripts/fleet-hosts (minutes; not here).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use yaml_rust2::{Yaml, YamlLoader};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")) {
            out.push(p);
        }
    }
    out.sort();
}

/// Every document of every YAML file under deploy/, with its file name.
fn documents() -> Vec<(String, Yaml)> {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    assert!(!files.is_empty(), "no YAML files in deploy/");
    let mut docs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.strip_prefix(deploy_dir()).unwrap().display().to_string();
        let parsed = YamlLoader::load_from_str(&text)
            .unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
        assert!(!parsed.is_empty(), "{name} is empty");
        docs.extend(parsed.into_iter().map(|d| (name.clone(), d)));
    }
    docs
}

fn str_of<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} is missing or not a string"))
}

fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .map(|s| match s {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    other => panic!("not a string: {other:?}"),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pod_spec<'a>(kind: &str, doc: &'a Yaml) -> Option<&'a Yaml> {
    match kind {
        "Job" | "DaemonSet" | "Deployment" => Some(&doc["spec"]["template"]["spec"]),
        "CronJob" => Some(&doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]),
        _ => None,
    }
}

/// Secrets defined in deploy/, as (name, key) pairs.
fn secret_keys(docs: &[(String, Yaml)]) -> BTreeSet<(String, String)> {
    let mut keys = BTreeSet::new();
    for (_, d) in docs {
        if d["kind"].as_str() == Some("Secret") {
            let name = str_of(&d["metadata"]["name"], "Secret name").to_string();
            for section in ["stringData", "data"] {
                if let Some(h) = d[section].as_hash() {
                    for k in h.keys() {
                        keys.insert((name.clone(), str_of(k, "Secret key").to_string()));
                    }
                }
            }
        }
    }
    keys
}

fn check_workload(file: &str, kind: &str, spec: &Yaml, secrets: &BTreeSet<(String, String)>) {
    assert!(
        spec["hostPID"].as_bool() != Some(true),
        "{file}: hostPID is not needed"
    );
    let containers = spec["containers"]
        .as_vec()
        .unwrap_or_else(|| panic!("{file}: {kind} has no containers"));
    assert!(!containers.is_empty(), "{file}: no containers");
    let mut runs_osmeter = false;
    for c in containers {
        str_of(&c["image"], "container image");
        let mut line = strings(&c["command"]);
        line.extend(strings(&c["args"]));
        let line = line.join(" ");
        if !line.contains("osmeter run") {
            continue;
        }
        runs_osmeter = true;
        assert!(
            line.contains("--store $(OSMETER_STORE)")
                || line.contains("--store \"$OSMETER_STORE\""),
            "{file}: the store must come from $OSMETER_STORE: {line}"
        );
        assert!(
            !line.contains("postgres://"),
            "{file}: a literal store URL in the command"
        );
        let env = c["env"]
            .as_vec()
            .unwrap_or_else(|| panic!("{file}: no env"));
        let store = env
            .iter()
            .find(|e| e["name"].as_str() == Some("OSMETER_STORE"))
            .unwrap_or_else(|| panic!("{file}: no OSMETER_STORE in env"));
        assert!(
            store["value"].is_badvalue(),
            "{file}: OSMETER_STORE must come from a Secret, not a literal value"
        );
        let r = &store["valueFrom"]["secretKeyRef"];
        let wanted = (
            str_of(&r["name"], "secretKeyRef.name").to_string(),
            str_of(&r["key"], "secretKeyRef.key").to_string(),
        );
        assert!(
            secrets.contains(&wanted),
            "{file}: Secret {wanted:?} is not defined in deploy/ (have {secrets:?})"
        );
        let sc = &c["securityContext"];
        let caps = strings(&sc["capabilities"]["add"]);
        let privileged = sc["privileged"].as_bool() == Some(true);
        assert!(
            privileged
                || (caps.iter().any(|c| c == "PERFMON" || c == "SYS_ADMIN")
                    && caps.iter().any(|c| c == "SYS_NICE")),
            "{file}: counters and SCHED_FIFO need PERFMON (or SYS_ADMIN) and SYS_NICE, or privileged"
        );
        assert!(
            c["resources"]["limits"]["cpu"].is_badvalue(),
            "{file}: a CPU limit throttles the measurements"
        );
    }
    assert!(runs_osmeter, "{file}: no container runs `osmeter run`");
}

#[test]
fn kubernetes_manifests_parse_and_run_osmeter_with_the_store_from_a_secret() {
    let docs = documents();
    let secrets = secret_keys(&docs);
    let mut kinds = BTreeSet::new();
    for (file, d) in &docs {
        let Some(kind) = d["kind"].as_str() else {
            continue;
        };
        kinds.insert(kind.to_string());
        str_of(&d["apiVersion"], &format!("{file}: apiVersion"));
        str_of(&d["metadata"]["name"], &format!("{file}: metadata.name"));
        if let Some(spec) = pod_spec(kind, d) {
            check_workload(file, kind, spec, &secrets);
            if kind == "DaemonSet" {
                let selector = d["spec"]["selector"]["matchLabels"]
                    .as_hash()
                    .unwrap_or_else(|| panic!("{file}: no selector"));
                let labels = &d["spec"]["template"]["metadata"]["labels"];
                for (k, v) in selector {
                    assert_eq!(
                        &labels[str_of(k, "label")],
                        v,
                        "{file}: selector misses the pods"
                    );
                }
            }
        }
    }
    for wanted in ["Job", "DaemonSet", "Secret", "Namespace"] {
        assert!(
            kinds.contains(wanted),
            "no {wanted} in deploy/ (have {kinds:?})"
        );
    }
}

/// The example Secret's URL asks for verify-full against a CA file, and every workload that runs
/// osmeter mounts that file from the Secret.
#[test]
fn the_example_store_checks_the_servers_certificate_and_every_workload_has_the_ca() {
    use osmeter::results::store::postgres::tls::{Roots, SslMode};
    let docs = documents();
    let (_, secret) = docs
        .iter()
        .find(|(_, d)| d["kind"].as_str() == Some("Secret"))
        .expect("a Secret in deploy/");
    let url = str_of(&secret["stringData"]["url"], "the Secret's url");
    let target = osmeter::results::store::postgres::check_url(url).unwrap();
    assert_eq!(target.tls.mode, SslMode::VerifyFull, "{url}");
    let Roots::File(ca) = &target.tls.roots else {
        panic!("the example URL names no sslrootcert file: {url}");
    };
    let key = ca.file_name().unwrap().to_str().unwrap();
    assert!(
        secret["stringData"][key].as_str().is_some(),
        "the Secret has no {key} for sslrootcert={}",
        ca.display()
    );
    let mut workloads = 0;
    for (file, d) in &docs {
        let Some(spec) = d["kind"].as_str().and_then(|k| pod_spec(k, d)) else {
            continue;
        };
        workloads += 1;
        let volume = spec["volumes"]
            .as_vec()
            .into_iter()
            .flatten()
            .find(|v| {
                v["secret"]["secretName"] == secret["metadata"]["name"]
                    && v["secret"]["items"]
                        .as_vec()
                        .into_iter()
                        .flatten()
                        .any(|i| i["key"].as_str() == Some(key) && i["path"].as_str() == Some(key))
            })
            .unwrap_or_else(|| panic!("{file}: no volume carries the Secret's {key}"));
        let name = &volume["name"];
        let mounted = spec["containers"].as_vec().into_iter().flatten().all(|c| {
            c["volumeMounts"].as_vec().into_iter().flatten().any(|m| {
                &m["name"] == name && m["mountPath"].as_str().map(Path::new) == ca.parent()
            })
        });
        assert!(
            mounted,
            "{file}: {} is not mounted where the URL reads it",
            ca.display()
        );
    }
    assert!(workloads > 0, "no workload in deploy/");
}

fn is_playbook(d: &Yaml) -> bool {
    d.as_vec()
        .is_some_and(|plays| plays.iter().all(|p| !p["hosts"].is_badvalue()))
}

#[test]
fn ansible_playbook_has_hosts_and_tasks_and_reads_the_store_from_the_environment() {
    let docs = documents();
    let playbooks: Vec<_> = docs.iter().filter(|(_, d)| is_playbook(d)).collect();
    assert!(!playbooks.is_empty(), "no Ansible playbook in deploy/");
    let inventory_groups: BTreeSet<String> = docs
        .iter()
        .filter_map(|(_, d)| d["all"]["children"].as_hash())
        .flat_map(|h| h.keys().filter_map(|k| k.as_str().map(str::to_string)))
        .collect();
    for (file, d) in playbooks {
        let plays = d.as_vec().unwrap();
        let mut runs_suite = false;
        for play in plays {
            let name = play["name"].as_str().unwrap_or("?");
            let hosts = str_of(&play["hosts"], &format!("{file}: hosts of {name}"));
            let tasks = play["tasks"]
                .as_vec()
                .unwrap_or_else(|| panic!("{file}: play {name:?} has no tasks"));
            assert!(!tasks.is_empty(), "{file}: play {name:?} has no tasks");
            for t in tasks {
                let mut text = String::new();
                for module in [
                    "ansible.builtin.shell",
                    "ansible.builtin.command",
                    "shell",
                    "command",
                ] {
                    match &t[module] {
                        Yaml::String(s) => text.push_str(s),
                        h @ Yaml::Hash(_) => text.push_str(h["cmd"].as_str().unwrap_or("")),
                        _ => {}
                    }
                }
                assert!(
                    !text.contains("postgres://"),
                    "{file}: a literal store URL in a task"
                );
                if text.contains("osmeter run") {
                    runs_suite = true;
                    assert!(
                        text.contains("--store \"$OSMETER_STORE\""),
                        "{file}: the suite must store to $OSMETER_STORE: {text}"
                    );
                    assert_eq!(
                        str_of(&play["environment"]["OSMETER_STORE"], "environment"),
                        "{{ osmeter_store }}",
                        "{file}: OSMETER_STORE must be handed over in the environment"
                    );
                    if hosts.contains("default('") {
                        let group = hosts
                            .split("default('")
                            .nth(1)
                            .unwrap()
                            .split('\'')
                            .next()
                            .unwrap();
                        assert!(
                            inventory_groups.contains(group),
                            "{file}: the example inventory has no group {group:?}"
                        );
                    }
                }
            }
        }
        assert!(runs_suite, "{file}: no task runs `osmeter run`");
    }
}

#[test]
fn every_yaml_file_is_a_manifest_a_playbook_or_an_inventory() {
    for (file, d) in documents() {
        let known = !d["kind"].is_badvalue() || is_playbook(&d) || !d["all"].is_badvalue();
        assert!(
            known,
            "{file}: neither a Kubernetes object, a playbook nor an inventory"
        );
    }
}

#[test]
fn ansible_syntax_check_when_ansible_is_installed() {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .any(|d| d.join("ansible-playbook").is_file());
    if !found {
        // CI installs it; elsewhere say what was not checked.
        assert!(
            std::env::var_os("CI").is_none(),
            "ansible-playbook is missing: apt-get install -y ansible-core"
        );
        eprintln!("SKIPPED: ansible-playbook not installed (apt-get install -y ansible-core)");
        return;
    }
    let dir = deploy_dir().join("ansible");
    let out = std::process::Command::new("ansible-playbook")
        .args([
            "--syntax-check",
            "-i",
            "inventory.example.yml",
            "playbook.yml",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// scripts/k8s-validate, with its output; None where python3-kubernetes is missing and cannot be
/// installed here (not root).
fn k8s_validate(files: &[PathBuf]) -> Option<(bool, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/k8s-validate");
    let out = std::process::Command::new(script)
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if text.contains("python3-kubernetes is missing") {
        assert!(std::env::var_os("CI").is_none(), "{text}");
        eprintln!("SKIPPED: {text}");
        return None;
    }
    Some((out.status.success(), text))
}

#[test]
fn the_kubernetes_manifests_hold_to_the_kubernetes_schema() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir().join("kubernetes"), &mut files);
    let Some((ok, text)) = k8s_validate(&files) else {
        return;
    };
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("{} document(s)", files.len())),
        "{text}"
    );
    // The check has teeth: a misspelt field, a number given as text, a missing required field.
    let dir = tempfile::tempdir().unwrap();
    let daemonset =
        std::fs::read_to_string(deploy_dir().join("kubernetes/daemonset.yaml")).unwrap();
    let broken = dir.path().join("broken.yaml");
    let spoilt = daemonset
        .replacen("containers:", "containerz:", 1)
        .replacen(
            "apiVersion: apps/v1",
            "apiVersion: apps/v1\nmetadata_: {}",
            1,
        );
    std::fs::write(&broken, spoilt).unwrap();
    let (ok, text) = k8s_validate(&[broken]).unwrap();
    assert!(!ok, "{text}");
    for fault in [
        "V1PodSpec has no field 'containerz'",
        "V1PodSpec needs 'containers'",
        "V1DaemonSet has no field 'metadata_'",
    ] {
        assert!(text.contains(fault), "{fault} not found in: {text}");
    }
}
