//! End-to-end: `/readyz` on the real `boomerang serve`, whose data directory is a small
//! file system of its own that fills up and empties again. `/healthz` stays up meanwhile.

use std::time::{Duration, Instant};

use boomerang_e2e::disk::{fill, SmallDisk};
use boomerang_e2e::{wait_for, Backend, Server, ServerOptions};
use reqwest::Method;

async fn readyz(server: &Server) -> u16 {
    let answer = server.request(Method::GET, "/readyz").send().await.unwrap();
    answer.status().as_u16()
}

#[tokio::test]
async fn readyz_turns_503_while_the_disk_is_full_and_200_when_space_returns() {
    let disk = SmallDisk::mount(128);
    // The log beside the disk, not on it: a full disk would take its lines too.
    let log_dir = std::env::temp_dir().join(format!("boomerang-log-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&log_dir).unwrap();
    let server = Server::start(ServerOptions {
        data_dir: Some(disk.0.join("data")),
        log_dir: Some(log_dir.clone()),
        ..ServerOptions::on(Backend::Embedded)
    });
    assert_eq!(readyz(&server).await, 200);

    let ballast = disk.0.join("ballast");
    fill(&ballast);
    let filled = Instant::now();
    wait_for("/readyz to answer 503", Duration::from_secs(2), || async {
        (readyz(&server).await == 503).then_some(())
    })
    .await;
    println!(
        "/readyz turned 503 {:?} after the disk filled",
        filled.elapsed()
    );
    let problem: serde_json::Value = server
        .request(Method::GET, "/readyz")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("disk:"), "{detail}");
    assert!(
        !detail.contains(&*disk.0.to_string_lossy()),
        "no path in a public answer: {detail}"
    );
    assert!(
        server.log().contains(&*disk.0.to_string_lossy()),
        "the data directory in the log"
    );
    assert_eq!(
        server.api().health().await.unwrap().status,
        "ok",
        "alive all along"
    );

    std::fs::remove_file(&ballast).unwrap();
    let freed = Instant::now();
    wait_for("/readyz to answer 200", Duration::from_secs(5), || async {
        (readyz(&server).await == 200).then_some(())
    })
    .await;
    println!(
        "/readyz turned 200 {:?} after space returned",
        freed.elapsed()
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&log_dir);
}
