//! A real S3 API on 127.0.0.1 for the tests of datasets in object storage: moto's server
//! (`python -m moto.server`, from `tests/python/requirements.txt`), run by the Python the
//! Python tests use (`LODTENSOR_PYTHON`, else `.venv`) on a free port, stopped when dropped.
//! Without that Python the test skips, unless `LODTENSOR_REQUIRE_PYTHON=1`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// moto's S3 server, running.
pub struct S3Server {
    child: Child,
    port: u16,
}

impl S3Server {
    /// The server, started; `None` (said on stderr) when there is no Python to run it and
    /// none is required.
    #[track_caller]
    pub fn start() -> Option<Self> {
        let python = super::python()?;
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python)
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run python -m moto.server (pip install -r tests/python/requirements.txt)");
        let mut server = S3Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.request("GET", "/moto-api/", &[]).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("moto's server exited ({status}): is moto[server] installed?");
            }
            assert!(Instant::now() < deadline, "moto's server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(server)
    }

    /// The endpoint URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The storage options that reach it (moto takes any credentials).
    pub fn options(&self) -> lodtensor::shards::RemoteOptions {
        Self::options_at(&self.endpoint())
    }

    /// The storage options that reach the server at `endpoint` (from another process).
    pub fn options_at(endpoint: &str) -> lodtensor::shards::RemoteOptions {
        lodtensor::shards::RemoteOptions::default()
            .with_storage_option("aws_endpoint", endpoint)
            .with_storage_option("aws_allow_http", "true")
            .with_storage_option("aws_access_key_id", "testing")
            .with_storage_option("aws_secret_access_key", "testing")
            .with_storage_option("aws_region", "us-east-1")
    }

    /// Makes the bucket `bucket` (nothing if it exists).
    pub fn create_bucket(&self, bucket: &str) {
        self.request("PUT", &format!("/{bucket}"), &[]).unwrap();
    }

    /// Copies the files of the directory `dir` (not its subdirectories) to `bucket` under
    /// `prefix`; returns the dataset's URL.
    pub fn upload_dir(&self, dir: &Path, bucket: &str, prefix: &str) -> String {
        self.create_bucket(bucket);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if path.is_file() && name != "_lodtensor.lock" {
                let status = self
                    .request(
                        "PUT",
                        &format!("/{bucket}/{prefix}/{name}"),
                        &std::fs::read(&path).unwrap(),
                    )
                    .unwrap();
                assert_eq!(status, 200, "PUT {name}");
            }
        }
        format!("s3://{bucket}/{prefix}/")
    }

    /// Stores `body` as the object `key` of `bucket`, readable without credentials (so that
    /// [`S3Server::has_object`] sees it).
    pub fn put_object(&self, bucket: &str, key: &str, body: &[u8]) {
        let path = format!("/{bucket}/{key}");
        let status = self.request_with("PUT", &path, "x-amz-acl: public-read\r\n", body);
        assert_eq!(status.unwrap(), 200, "PUT {key}");
    }

    /// Whether `bucket` holds the object `key` stored by [`S3Server::put_object`] (moto
    /// refuses a GET without credentials of another's object).
    pub fn has_object(&self, bucket: &str, key: &str) -> bool {
        self.request("GET", &format!("/{bucket}/{key}"), &[])
            .unwrap()
            == 200
    }

    /// One HTTP/1.0 request (moto checks no signature); the response's status.
    fn request(&self, method: &str, path: &str, body: &[u8]) -> std::io::Result<u16> {
        self.request_with(method, path, "", body)
    }

    /// [`S3Server::request`] with `headers` (each line ending in CRLF).
    fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &str,
        body: &[u8],
    ) -> std::io::Result<u16> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n{headers}Content-Length: {}\r\n\r\n",
            self.port,
            body.len()
        )?;
        stream.write_all(body)?;
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes)?;
        let response = String::from_utf8_lossy(&bytes);
        let status = response.split(' ').nth(1).and_then(|s| s.parse().ok());
        status.ok_or_else(|| std::io::Error::other(format!("no HTTP status in {response:?}")))
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
