//! End-to-end: the API under a flood of connections that never finish a request, on the
//! real `boomerang serve` with an open-file limit of 1,024.

use std::time::{Duration, Instant};

use boomerang_e2e::{callback, wait_for, Backend, Receiver, Server, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const IDLE: usize = 2_000;
const SLOWLORIS: usize = 500;

/// Lets this test process hold the flood's sockets: its open-file limit raised to the
/// hard one, and past it where it may (root) if that is too low.
fn raise_own_open_files() {
    let needed = (IDLE + SLOWLORIS + 1024) as libc::rlim_t;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_max = limit.rlim_max.max(needed);
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
            limit.rlim_cur = limit.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(
        limit.rlim_cur >= needed,
        "this test needs {needed} open files; the hard limit is {}",
        limit.rlim_cur
    );
}

fn addr_of(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

/// The server's resident memory, in KiB.
fn rss_kib(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A connection that sends a request's headers one byte a second, for ever.
fn slowloris(addr: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Ok(mut stream) = TcpStream::connect(&addr).await else {
            return;
        };
        if stream
            .write_all(b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\n")
            .await
            .is_err()
        {
            return;
        }
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if stream.write_all(b"X").await.is_err() {
                return;
            }
        }
    })
}

#[tokio::test]
async fn idle_and_slow_connections_leave_the_api_to_its_clients() {
    raise_own_open_files();
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions {
        open_files: Some(1024),
        ..ServerOptions::on(Backend::Embedded)
    });
    let api = server.api();
    api.health().await.unwrap();
    let idle_rss = rss_kib(&server);
    let addr = addr_of(&server);

    let mut idle = Vec::new();
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(&addr).await.expect("connect"));
    }
    let slow: Vec<_> = (0..SLOWLORIS).map(|_| slowloris(addr.clone())).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut took = Vec::new();
    for n in 0..50 {
        let started = Instant::now();
        let task = callback(rx.url(&format!("/r/{n}")));
        let created = tokio::time::timeout(Duration::from_secs(5), api.create(&task, None))
            .await
            .expect("a registration timed out during the flood")
            .expect("a registration was refused during the flood");
        assert_eq!(created.status, 201);
        took.push(started.elapsed());
    }
    took.sort();
    println!(
        "50 registrations during {IDLE} idle and {SLOWLORIS} slow connections: p50 {:?}, p99 {:?}, max {:?}",
        took[24], took[49], took[49]
    );
    // The server kept under its open-file limit by closing the flood's connections.
    let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
        .unwrap()
        .count();
    assert!(fds < 1024, "{fds} files open");
    let peak_rss = rss_kib(&server);

    drop(idle);
    for s in slow {
        s.abort();
    }
    let settled = wait_for(
        "memory to return after the storm",
        Duration::from_secs(20),
        || async {
            let now = rss_kib(&server);
            (now <= 2 * idle_rss).then_some(now)
        },
    )
    .await;
    println!("RSS: {idle_rss} KiB idle, {peak_rss} KiB during the flood, {settled} KiB after");
    api.health().await.unwrap();
}

/// Reads until the server closes the connection: true if it did within `within`.
async fn closed_by_server(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test]
async fn a_connection_that_sends_no_request_in_time_is_closed() {
    let server = Server::start(ServerOptions {
        extra_args: vec!["--header-timeout".into(), "1s".into()],
        ..ServerOptions::on(Backend::Embedded)
    });
    let addr = addr_of(&server);
    // Sends nothing.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    // Sends its headers slower than the timeout allows.
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let trickle = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if slow.write_all(b"X-Slow: 1\r\n").await.is_err() {
                break;
            }
        }
        slow
    });
    // Asks once, then stays idle on a kept-alive connection.
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 12];
    kept.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");

    assert!(
        closed_by_server(&mut silent, Duration::from_secs(5)).await,
        "silent"
    );
    assert!(
        closed_by_server(&mut kept, Duration::from_secs(5)).await,
        "idle keep-alive"
    );
    let mut slow = trickle.await.unwrap();
    assert!(
        closed_by_server(&mut slow, Duration::from_secs(5)).await,
        "slowloris"
    );
    // A well-behaved client is served as ever.
    server.api().health().await.unwrap();
}
