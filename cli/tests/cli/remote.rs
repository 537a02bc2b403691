//! A URL wherever a command takes a sharded dataset's directory: `convert` to and from
//! `s3://`, `info`, `validate`, `show`, `slice`, `vacuum`, `tokenize` from and to one, against moto's S3 server on 127.0.0.1
//! (skipped without Python unless `LODTENSOR_REQUIRE_PYTHON=1`), the endpoint and the
//! credentials from `AWS_*` variables.

use std::path::Path;

use crate::support::common::S3Server;
use crate::support::{Run, batches_file, lodtensor_env, lodtensor_in};

/// Runs `lodtensor ARGS…` in `dir` with the server's endpoint and credentials in `AWS_*`.
fn lodtensor_s3(s3: &S3Server, dir: &Path, args: &[&str]) -> Run {
    let envs = [
        ("AWS_ENDPOINT_URL", s3.endpoint().to_string()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ("AWS_REGION", "us-east-1".into()),
    ];
    lodtensor_env(dir, args, envs)
}

#[test]
fn every_reading_command_takes_a_url_and_convert_writes_to_one() {
    let Some(s3) = S3Server::start() else { return };
    s3.create_bucket("cli");
    let dir = tempfile::tempdir().unwrap();
    let input = batches_file(dir.path());
    let input = input.to_str().unwrap();
    let run = |args: &[&str]| lodtensor_s3(&s3, dir.path(), args);
    let url = "s3://cli/data/";
    assert!(
        run(&["convert", input, url, "--shard-rows", "2"])
            .ok()
            .contains("to s3://cli/data/")
    );
    run(&["convert", input, url, "--shard-rows", "2", "--append"]).ok();
    let info = run(&["info", url, "--cache-dir", "cache"]);
    assert!(
        info.ok().starts_with("s3://cli/data/: sharded dataset"),
        "{info:?}"
    );
    assert!(
        run(&["validate", url, "--cache-dir", "cache"])
            .ok()
            .starts_with("ok: s3://cli/data/")
    );
    run(&["show", url, "--cache-dir", "cache", "--cache-limit", "1GB"]).ok();
    run(&[
        "slice",
        url,
        "--rows",
        "1..3",
        "part.arrow",
        "--cache-dir",
        "cache",
    ])
    .ok();
    run(&["convert", url, "back.arrow", "--cache-dir", "cache"]).ok();
    let local = run(&["convert", input, "local/", "--shard-rows", "2"]);
    local.ok();
    run(&["convert", input, "local/", "--shard-rows", "2", "--append"]).ok();
    // The rows read back from the store are the rows of the local dataset.
    let shown = |input: &str| {
        let out = run(&["show", input, "--rows", "0..24", "--cache-dir", "cache"]);
        out.ok().lines().skip(1).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(shown(url), shown("local/"));
    // Errors: one line, the exit codes of `--help` (3: I/O, 2: usage).
    let missing = run(&["info", "s3://no-such-bucket/x/", "--cache-dir", "cache"]);
    assert!(missing.fails(3).contains("no such bucket"), "{missing:?}");
    let bad = run(&["info", url, "--cache-limit", "lots"]);
    assert!(bad.fails(2).contains("--cache-limit lots"), "{bad:?}");
    let again = run(&["convert", input, url]);
    assert!(again.fails(3).contains("already there"), "{again:?}");
    // `vacuum` of the URL: a killed writer's shard goes, once older than the grace period.
    s3.put_object("cli", "data/part-00099.arrow", b"a killed writer's");
    let kept = run(&["vacuum", url]);
    assert!(
        kept.ok().contains("0 files removed (grace 86400 s)"),
        "{kept:?}"
    );
    let swept = run(&["vacuum", url, "--grace", "0"]);
    let out = swept.ok();
    assert!(
        out.contains("removed s3://cli/data/part-00099.arrow"),
        "{out}"
    );
    assert!(out.contains("1 file removed"), "{out}");
    assert_eq!(shown(url), shown("local/"));
}

#[test]
fn a_bucket_manifest_claiming_huge_shards_fails_with_an_error_not_a_signal() {
    let Some(s3) = S3Server::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = batches_file(dir.path());
    let run = |args: &[&str]| lodtensor_s3(&s3, dir.path(), args);
    run(&[
        "convert",
        input.to_str().unwrap(),
        "local/",
        "--shard-rows",
        "2",
    ])
    .ok();
    let local = dir.path().join("local");
    let manifest_path = local.join(lodtensor::shards::MANIFEST_NAME);
    let manifest = lodtensor::shards::Manifest::load(&manifest_path).unwrap();
    for (name, bytes) in [("e62", 1u64 << 62), ("e50", 1 << 50)] {
        let mut forged = manifest.clone();
        forged.shards[0].bytes = bytes;
        forged.write(&manifest_path).unwrap();
        let url = s3.upload_dir(&local, "hostile", name);
        for command in ["validate", "show", "hist"] {
            let out = run(&[command, &url, "--cache-dir", "cache"]);
            let line = out.fails(1);
            assert!(
                line.contains("bytes") && line.contains(&bytes.to_string()),
                "{out:?}"
            );
        }
    }
}

#[cfg(feature = "tokenize")]
#[test]
fn tokenize_reads_a_prefix_and_a_glob_of_a_bucket() {
    use crate::tokenize::{jsonl, rows, tokenizer};
    let Some(s3) = S3Server::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(corpus.join("a.txt"), "LoD tensors, mapped.").unwrap();
    std::fs::write(corpus.join("b.txt"), "From a bucket.").unwrap();
    jsonl(&corpus.join("c.jsonl"), &["one\n\ntwo", "three"]);
    s3.upload_dir(&corpus, "tokcli", "corpus");
    let run = |args: &[&str]| lodtensor_s3(&s3, dir.path(), args);
    let tok = tokenizer();
    lodtensor_in(
        dir.path(),
        ["tokenize", "corpus", "local", "--tokenizer", &tok],
    )
    .ok();
    let from_url = run(&[
        "tokenize",
        "s3://tokcli/corpus/",
        "url",
        "--tokenizer",
        &tok,
    ]);
    assert!(from_url.ok().contains("4 documents"), "{from_url:?}");
    assert_eq!(
        rows(&dir.path().join("url")),
        rows(&dir.path().join("local"))
    );
    // A glob, written to the bucket.
    let out = "s3://tokcli/tokens/";
    run(&[
        "tokenize",
        "s3://tokcli/corpus/*.jsonl",
        out,
        "--tokenizer",
        &tok,
    ])
    .ok();
    let info = run(&["info", out, "--cache-dir", "cache"]);
    assert!(info.ok().contains("2 rows"), "{info:?}");
    let missing = run(&["tokenize", "s3://tokcli/none/", "x", "--tokenizer", &tok]);
    assert!(
        missing.fails(3).contains("s3://tokcli/none/"),
        "{missing:?}"
    );
}
