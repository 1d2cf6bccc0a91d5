//! A throwaway etcd for tests: one member on free loopback ports with a temporary data dir,
//! killed when dropped.
//!
//! The binary is `$ETCD_BIN`, else `/usr/bin/etcd` (Debian's `etcd-server`), else `etcd` on
//! `PATH`. Without one, [`EtcdProcess::start_or_skip`] skips the test, except under CI (`CI`
//! set), where it panics: tests that need etcd must not pass by doing nothing.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where tests look for etcd.
pub fn etcd_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("ETCD_BIN") {
        return Some(PathBuf::from(bin));
    }
    let debian = Path::new("/usr/bin/etcd");
    if debian.exists() {
        return Some(debian.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("etcd"))
            .find(|p| p.exists())
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One member of a test cluster.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
    child: Option<Child>,
    tls: bool,
}

impl Member {
    fn client_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }
}

/// Files of a TLS-serving test etcd: its CA, and a client certificate and key it accepts.
#[derive(Clone, Debug)]
pub struct ClientTls {
    /// CA that signed the server's and the client's certificates (`--etcd-cafile`).
    pub ca_file: PathBuf,
    /// Client certificate (`--etcd-certfile`).
    pub cert_file: PathBuf,
    /// Client key (`--etcd-keyfile`).
    pub key_file: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
}

/// A running etcd cluster of one or more members (a real quorum with three).
pub struct EtcdProcess {
    binary: PathBuf,
    members: Vec<Member>,
    tls: Option<ClientTls>,
    _dir: tempfile::TempDir,
}

/// Writes a CA, a serving certificate for 127.0.0.1 and a client certificate into `dir`.
fn write_tls(dir: &Path) -> ClientTls {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.distinguished_name
        .push(DnType::CommonName, "rkcm-test-etcd-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer).expect("certificate");
        (cert.pem(), key.serialize_pem())
    };
    let (server_pem, server_key_pem) = leaf("etcd", ExtendedKeyUsagePurpose::ServerAuth);
    let (client_pem, client_key_pem) = leaf("rkcm-apiserver", ExtendedKeyUsagePurpose::ClientAuth);
    let write = |name: &str, pem: &str| {
        let path = dir.join(name);
        std::fs::write(&path, pem).expect("write TLS file");
        path
    };
    ClientTls {
        ca_file: write("ca.crt", &ca_cert.pem()),
        cert_file: write("client.crt", &client_pem),
        key_file: write("client.key", &client_key_pem),
        server_cert: write("server.crt", &server_pem),
        server_key: write("server.key", &server_key_pem),
    }
}

impl EtcdProcess {
    /// Starts a one-member etcd; `None` (and a note on stderr) when there is no etcd binary
    /// outside CI.
    ///
    /// Panics when etcd is missing under CI or does not come up (tests only).
    pub fn start_or_skip() -> Option<Self> {
        Self::cluster_or_skip(1)
    }

    /// Starts an etcd cluster of `size` members, as [`start_or_skip`](Self::start_or_skip).
    pub fn cluster_or_skip(size: usize) -> Option<Self> {
        Self::start(size, false)
    }

    /// Starts a one-member etcd serving clients over TLS that requires client certificates
    /// (`--client-cert-auth`); [`client_tls`](Self::client_tls) has the files to reach it.
    pub fn tls_or_skip() -> Option<Self> {
        Self::start(1, true)
    }

    /// The client's TLS files, when the cluster serves TLS.
    pub fn client_tls(&self) -> Option<&ClientTls> {
        self.tls.as_ref()
    }

    fn start(size: usize, tls: bool) -> Option<Self> {
        let Some(binary) = etcd_binary() else {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "etcd is required by this test under CI: install Debian's etcd-server \
                     (/usr/bin/etcd) or set ETCD_BIN"
                );
            }
            eprintln!("skipping: no etcd binary (install etcd-server or set ETCD_BIN)");
            return None;
        };
        let dir = tempfile::tempdir().expect("temporary directory for etcd");
        let members = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_port: free_port(),
                peer_port: free_port(),
                data_dir: dir.path().join(format!("m{i}")),
                child: None,
                tls,
            })
            .collect();
        let tls = tls.then(|| write_tls(dir.path()));
        let mut etcd = Self {
            binary,
            members,
            tls,
            _dir: dir,
        };
        for i in 0..size {
            etcd.spawn(i);
        }
        etcd.wait_ready();
        Some(etcd)
    }

    /// The client URLs of every member.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(Member::client_url).collect()
    }

    fn spawn(&mut self, i: usize) {
        let cluster = self
            .members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let m = &mut self.members[i];
        std::fs::create_dir_all(&m.data_dir).expect("etcd data dir");
        let log = std::fs::File::create(m.data_dir.with_extension("log")).expect("etcd log file");
        let mut command = Command::new(&self.binary);
        if let Some(tls) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.server_cert)
                .arg("--key-file")
                .arg(&tls.server_key)
                .arg("--trusted-ca-file")
                .arg(&tls.ca_file)
                .arg("--client-cert-auth");
        }
        let child = command
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(&m.data_dir)
            .arg("--listen-client-urls")
            .arg(m.client_url())
            .arg("--advertise-client-urls")
            .arg(m.client_url())
            .arg("--listen-peer-urls")
            .arg(m.peer_url())
            .arg("--initial-advertise-peer-urls")
            .arg(m.peer_url())
            .arg("--initial-cluster")
            .arg(&cluster)
            .arg("--initial-cluster-token")
            .arg("rkcm-test")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        m.child = Some(child);
    }

    /// Waits until every running member answers its health endpoint.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for i in 0..self.members.len() {
            if self.members[i].child.is_none() {
                continue;
            }
            let port = self.members[i].client_port;
            let tls = self.members[i].tls;
            loop {
                // Over TLS an open port is enough here; clients retry until etcd serves.
                if (tls && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
                    || healthy(port)
                {
                    break;
                }
                if let Some(child) = self.members[i].child.as_mut() {
                    if let Ok(Some(status)) = child.try_wait() {
                        let log =
                            std::fs::read_to_string(self.members[i].data_dir.with_extension("log"))
                                .unwrap_or_default();
                        panic!("etcd exited with {status}:\n{log}");
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "etcd on port {port} did not become healthy within 30s"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Kills member `i` (SIGKILL); its data stays for [`restart`](Self::restart).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills every member.
    pub fn stop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }

    /// Starts the killed members again on their ports and data, and waits until they serve.
    pub fn restart(&mut self) {
        for i in 0..self.members.len() {
            if self.members[i].child.is_none() {
                self.spawn(i);
            }
        }
        self.wait_ready();
    }
}

impl EtcdProcess {
    fn client(&self) -> Result<super::client::Client, String> {
        super::client::Client::new(&super::EtcdConfig::new(self.endpoints()))
            .map_err(|e| e.to_string())
    }

    /// Compacts the cluster's history up to `revision` (`etcdctl compact`).
    pub async fn compact(&self, revision: i64) -> Result<(), String> {
        let client = self.client()?;
        client
            .compact(revision)
            .await
            .map_err(|e| client.error(e).to_string())
    }

    /// The value and version of `key` at `revision` (0: the current one), as `etcdctl get
    /// --rev`; an error carries etcd's message ("required revision has been compacted").
    pub async fn get(
        &self,
        key: &str,
        revision: i64,
    ) -> Result<Option<(bytes::Bytes, i64)>, String> {
        let client = self.client()?;
        let resp = client
            .range(key.to_string(), bytes::Bytes::new(), revision, 0)
            .await
            .map_err(|e| client.error(e).to_string())?;
        Ok(resp.kvs.into_iter().next().map(|kv| (kv.value, kv.version)))
    }
}

/// Whether etcd on `port` answers `GET /health` with `"health":"true"`.
fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
