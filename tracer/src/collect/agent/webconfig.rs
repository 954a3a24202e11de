//! `tracer agent --web.config.file FILE`: TLS and basic auth, with the YAML
//! keys of the Prometheus exporter-toolkit's web configuration file, so that
//! the file a node_exporter uses works here unchanged:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/tracer/agent.crt      # PEM, the chain (leaf first)
//!   key_file: /etc/tracer/agent.key       # PEM, PKCS#8, PKCS#1 or SEC1
//!   client_auth_type: RequireAndVerifyClientCert   # optional (mTLS)
//!   client_ca_file: /etc/tracer/clients.pem        # with it
//!   min_version: TLS12                    # TLS12 (default) or TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$...                # bcrypt hashes (htpasswd -nBC 10)
//! ```
//!
//! Keys the toolkit has and this agent does not implement (`cipher_suites`,
//! `curve_preferences`, `http_server_config`, ...) are refused by name
//! rather than ignored: a file that asks for something is never served
//! without it. Relative paths are relative to the file's directory, as in
//! the toolkit.
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, anyhow, bail};
use serde::Deserialize;
use tracer_format::open::Kind;

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    client_auth_type: Option<String>,
    client_ca_file: Option<PathBuf>,
    min_version: Option<String>,
    max_version: Option<String>,
}

/// What the file configures.
pub struct WebConfig {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub auth: Option<BasicAuth>,
    /// `client_auth_type: RequireAndVerifyClientCert`: no client without a
    /// certificate of the configured CA gets an answer.
    pub client_certs_required: bool,
}

impl WebConfig {
    pub fn load(path: &Path) -> anyhow::Result<WebConfig> {
        let text = tracer_format::open::read_to_string(path, Kind::WebConfig)
            .map_err(|e| anyhow!("--web.config.file: {e:#}"))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, base).map_err(|e| anyhow!("--web.config.file {}: {e:#}", path.display()))
    }

    /// `text` is the YAML; relative paths are resolved against `base`.
    pub fn parse(text: &str, base: &Path) -> anyhow::Result<WebConfig> {
        if text.trim().is_empty() {
            // The exporter toolkit reads it as plain HTTP without authentication: a file
            // given for security that secures nothing is refused, not taken silently.
            bail!(
                "empty: it would serve plain HTTP without authentication; give tls_server_config and/or basic_auth_users, or leave --web.config.file out"
            );
        }
        let f: File = {
            serde_yaml_ng::from_str(text).map_err(|e| {
                let at = e.location().map(|l| format!("line {}: ", l.line())).unwrap_or_default();
                anyhow!("{at}{e} (keys: tls_server_config.cert_file/key_file/client_auth_type/client_ca_file/min_version/max_version, basic_auth_users)")
            })?
        };
        let client_certs_required = f
            .tls_server_config
            .as_ref()
            .is_some_and(|t| t.client_auth_type.as_deref() == Some("RequireAndVerifyClientCert"));
        let tls = f.tls_server_config.map(|t| tls_config(t, base)).transpose()?;
        let auth = match f.basic_auth_users.is_empty() {
            true => None,
            false => Some(BasicAuth::new(f.basic_auth_users)?),
        };
        Ok(WebConfig { tls, auth, client_certs_required })
    }
}

fn resolve(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { base.join(p) }
}

/// A PEM file the config names (`key`), read within a web config file's bound.
fn pem_file(key: &str, p: &Path) -> anyhow::Result<Vec<u8>> {
    tracer_format::open::read(p, Kind::WebConfig).map_err(|e| anyhow!("tls_server_config.{key}: {e:#}"))
}

fn version(s: &str, key: &str) -> anyhow::Result<&'static rustls::SupportedProtocolVersion> {
    match s {
        "TLS12" => Ok(&rustls::version::TLS12),
        "TLS13" => Ok(&rustls::version::TLS13),
        "TLS10" | "TLS11" => bail!("tls_server_config.{key}: {s} is not supported (TLS12 or TLS13)"),
        _ => bail!("tls_server_config.{key}: {s:?}: not a TLS version (TLS12 or TLS13)"),
    }
}

fn tls_config(t: TlsFile, base: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (Some(cert), Some(key)) = (&t.cert_file, &t.key_file) else {
        bail!("tls_server_config needs both cert_file and key_file");
    };
    let (cert, key) = (resolve(base, cert), resolve(base, key));
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem_file("cert_file", &cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("tls_server_config.cert_file {}: {e}", cert.display()))?;
    if chain.is_empty() {
        bail!("tls_server_config.cert_file {}: no CERTIFICATE in it", cert.display());
    }
    let key_path = key;
    let key = PrivateKeyDer::from_pem_slice(&pem_file("key_file", &key_path)?)
        .map_err(|e| anyhow!("tls_server_config.key_file {}: {e} (a PEM private key)", key_path.display()))?;
    // Index 0: TLS 1.2, 1: TLS 1.3.
    let all = [&rustls::version::TLS12, &rustls::version::TLS13];
    let at = |v: &rustls::SupportedProtocolVersion| all.iter().position(|a| a.version == v.version).unwrap_or(0);
    let lo = at(version(t.min_version.as_deref().unwrap_or("TLS12"), "min_version")?);
    let hi = at(version(t.max_version.as_deref().unwrap_or("TLS13"), "max_version")?);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        all.iter().enumerate().filter(|(i, _)| (lo..=hi).contains(i)).map(|(_, v)| *v).collect();
    if versions.is_empty() {
        bail!("tls_server_config: min_version is above max_version");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .context("TLS versions")?;
    let auth_type = t.client_auth_type.as_deref().unwrap_or("NoClientCert");
    let builder = match auth_type {
        "NoClientCert" => {
            if t.client_ca_file.is_some() {
                bail!(
                    "tls_server_config.client_ca_file needs client_auth_type RequireAndVerifyClientCert or VerifyClientCertIfGiven"
                );
            }
            builder.with_no_client_auth()
        }
        "RequireAndVerifyClientCert" | "VerifyClientCertIfGiven" => {
            let Some(ca) = &t.client_ca_file else {
                bail!("tls_server_config.client_auth_type {auth_type} needs client_ca_file");
            };
            let ca = resolve(base, ca);
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(&pem_file("client_ca_file", &ca)?)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| anyhow!("tls_server_config.client_ca_file {}: {e}", ca.display()))?
            {
                roots.add(c).map_err(|e| anyhow!("tls_server_config.client_ca_file {}: {e}", ca.display()))?;
            }
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = match auth_type {
                "VerifyClientCertIfGiven" => v.allow_unauthenticated(),
                _ => v,
            };
            builder.with_client_cert_verifier(v.build().map_err(|e| anyhow!("tls_server_config.client_ca_file: {e}"))?)
        }
        other => bail!(
            "tls_server_config.client_auth_type {other:?} is not supported (NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert)"
        ),
    };
    let mut cfg = builder.with_single_cert(chain, key).map_err(|e| key_mismatch(&key_path, &cert, &e))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Why rustls refused the key for the certificate, naming both files in
/// the file's own words (never rustls' variant names).
fn key_mismatch(key: &Path, cert: &Path, e: &rustls::Error) -> anyhow::Error {
    use rustls::InconsistentKeys;
    let why = match e {
        rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => "the key does not match the certificate",
        rustls::Error::InconsistentKeys(_) => "cannot tell whether the key matches the certificate",
        _ => "the key cannot be used with the certificate (an RSA, ECDSA or Ed25519 key is needed)",
    };
    anyhow!("tls_server_config.key_file {}: {why} in cert_file {}", key.display(), cert.display())
}

/// `basic_auth_users`: user -> bcrypt hash. A password that was verified
/// once is remembered (a scrape every few seconds would otherwise cost a
/// bcrypt round each); at most [`BasicAuth::CACHE`] pairs.
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    verified: Mutex<HashSet<(String, String)>>,
}

impl BasicAuth {
    const CACHE: usize = 64;

    pub fn new(users: BTreeMap<String, String>) -> anyhow::Result<BasicAuth> {
        for (u, h) in &users {
            // The parser checks the cost and the length of salt and hash.
            if h.parse::<bcrypt::HashParts>().is_err() {
                bail!("basic_auth_users.{u}: not a bcrypt hash ($2y$10$..., e.g. from `htpasswd -nBC 10 {u}`)");
            }
        }
        Ok(BasicAuth { users, verified: Mutex::new(HashSet::new()) })
    }

    /// Whether an `Authorization` header value names a user with the right
    /// password. Slow (bcrypt) the first time for a pair.
    pub fn check(&self, header: Option<&str>) -> bool {
        let Some((user, pass)) = header.and_then(parse_basic) else { return false };
        let Some(hash) = self.users.get(&user) else { return false };
        let key = (user, pass);
        if self.verified.lock().unwrap_or_else(|e| e.into_inner()).contains(&key) {
            return true;
        }
        let ok = bcrypt::verify(&key.1, hash).unwrap_or(false);
        if ok {
            let mut v = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            if v.len() >= Self::CACHE {
                v.clear();
            }
            v.insert(key);
        }
        ok
    }

    /// Whether the pair is known good already (no bcrypt needed).
    pub fn cached(&self, header: Option<&str>) -> bool {
        let Some(key) = header.and_then(parse_basic) else { return false };
        self.verified.lock().unwrap_or_else(|e| e.into_inner()).contains(&key)
    }
}

/// `Basic base64(user:password)` -> (user, password).
fn parse_basic(h: &str) -> Option<(String, String)> {
    use base64::Engine as _;
    let (scheme, rest) = h.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
    let s = String::from_utf8(raw).ok()?;
    let (u, p) = s.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn basic(u: &str, p: &str) -> String {
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}")))
    }

    #[test]
    fn basic_auth_checks_bcrypt_hashes() {
        let hash = bcrypt::hash("s3cret", 4).unwrap().replacen("$2b$", "$2y$", 1);
        let cfg = WebConfig::parse(&format!("basic_auth_users:\n  prom: '{hash}'\n"), Path::new("/")).unwrap();
        assert!(cfg.tls.is_none());
        let a = cfg.auth.unwrap();
        assert!(a.check(Some(&basic("prom", "s3cret"))));
        assert!(a.cached(Some(&basic("prom", "s3cret"))));
        assert!(!a.check(Some(&basic("prom", "wrong"))));
        assert!(!a.check(Some(&basic("other", "s3cret"))));
        assert!(!a.check(Some("Bearer xyz")));
        assert!(!a.check(None));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let e = |t: &str| WebConfig::parse(t, Path::new("/nonexistent")).err().map(|e| format!("{e:#}")).unwrap();
        assert!(e("basic_auth_users:\n  u: plain\n").contains("basic_auth_users.u: not a bcrypt hash"));
        assert!(e("tls_server_config:\n  cert_file: a.crt\n").contains("needs both cert_file and key_file"));
        assert!(e("tls_server_config:\n  cipher_suites: [x]\n").contains("unknown field `cipher_suites`"));
        assert!(e("http_server_config:\n  http2: false\n").contains("line 1"));
        assert_eq!(
            e("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"),
            "tls_server_config.cert_file: cannot open /nonexistent/a.crt (No such file or directory (os error 2))"
        );
        // An empty file would secure nothing: refused, as whitespace only is.
        for empty in ["", "  \n\n"] {
            assert_eq!(
                e(empty),
                "empty: it would serve plain HTTP without authentication; give tls_server_config and/or basic_auth_users, or leave --web.config.file out"
            );
        }
    }

    /// A self-signed P-256 certificate, its key, and another P-256 key
    /// (made for this test with openssl; they secure nothing).
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBgzCCASmgAwIBAgIUSyppmxBTFxmlfW93nkZFdDrNwVgwCgYIKoZIzj0EAwIw\nFjEUMBIGA1UEAwwLdHJhY2VyLXRlc3QwIBcNMjYxMjAxMjAyOTQyWhgPMjEyNjEx\nMDcyMDI5NDJaMBYxFDASBgNVBAMMC3RyYWNlci10ZXN0MFkwEwYHKoZIzj0CAQYI\nKoZIzj0DAQcDQgAEz/pVMXIzqvoEKKTDioMVXdPar+XDEG5e0bCNdRj1Lpw4Y3jb\nzUH+S8rvLFqT2LuFirm5ogrpLvvcD7Yhl4u3mqNTMFEwHQYDVR0OBBYEFE0CXYpV\nYqEv+FbJmxn47pgMMJLOMB8GA1UdIwQYMBaAFE0CXYpVYqEv+FbJmxn47pgMMJLO\nMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgWWWwvDA5ImbraheU\nWAcIp4CuCEB+8HVgJcQhsM0WNzQCIQDlw4LmaBbb3YyRkxoCRNw4U/tOnsHpGAlt\n6sPt5MuXPw==\n-----END CERTIFICATE-----\n";
    const ITS_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgThOoGB/0EfODghIp\nNdnf9TxYbPeyE6sDQ12JlAP2BLChRANCAATP+lUxcjOq+gQopMOKgxVd09qv5cMQ\nbl7RsI11GPUunDhjeNvNQf5Lyu8sWpPYu4WKubmiCuku+9wPtiGXi7ea\n-----END PRIVATE KEY-----\n";
    const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnRisS2MtfZP3Pt//\nbocYyNwKcLB3T9lgSqH0kUQqggShRANCAAQcK2yQ2LrokOADQC3RBZwc+Dvlt0rD\nvO/iChH2YevPTIwFM6USl/Qc8U5zrCqG2BeaAHRcccWqNAphOEZKW3Dh\n-----END PRIVATE KEY-----\n";

    #[test]
    fn a_key_of_another_certificate_is_named_with_both_files() {
        let dir = std::env::temp_dir().join(format!("tracer-webconfig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in [("a.crt", CERT), ("a.key", ITS_KEY), ("b.key", OTHER_KEY)] {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let cfg =
            |key: &str| WebConfig::parse(&format!("tls_server_config:\n  cert_file: a.crt\n  key_file: {key}\n"), &dir);
        assert!(cfg("a.key").unwrap().tls.is_some());
        assert!(!cfg("a.key").unwrap().client_certs_required);
        // Client certificates count as authentication only when they are required.
        let mtls = |auth: &str| {
            WebConfig::parse(
                &format!(
                    "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_auth_type: {auth}\n  client_ca_file: a.crt\n"
                ),
                &dir,
            )
            .unwrap()
            .client_certs_required
        };
        assert!(mtls("RequireAndVerifyClientCert"));
        assert!(!mtls("VerifyClientCertIfGiven"));
        assert_eq!(
            format!("{:#}", cfg("b.key").err().unwrap()),
            format!(
                "tls_server_config.key_file {}/b.key: the key does not match the certificate in cert_file {}/a.crt",
                dir.display(),
                dir.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
