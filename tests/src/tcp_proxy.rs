//! A TCP proxy on loopback, to cut a service's connections (a database's, say) as a network
//! failure would: every byte is passed on both ways until [`TcpProxy::cut`], which closes
//! every open connection at once and refuses new ones until [`TcpProxy::heal`].
//!
//! It runs on a runtime of its own (one worker thread), so that it keeps passing bytes
//! while the test's thread blocks (in `Server::start`, say, on a single-threaded runtime).
//! (`fault_proxy` answers HTTP calls; this one knows nothing of what it carries.)

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::{TcpListener, TcpStream};

/// A proxy on a free loopback port in front of a target address.
pub struct TcpProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    runtime: Option<tokio::runtime::Runtime>,
}

#[derive(Default)]
struct State {
    /// Between `cut` and `heal`.
    cut: bool,
    next_id: u64,
    /// The open connections, by id.
    open: HashMap<u64, Sockets>,
}

/// Copies of a connection's sockets (another descriptor on each), to shut them down from
/// outside the task that copies between them.
struct Sockets {
    client: std::net::TcpStream,
    target: Option<std::net::TcpStream>,
}

impl Sockets {
    fn shut_down(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        if let Some(target) = &self.target {
            let _ = target.shutdown(Shutdown::Both);
        }
    }
}

impl TcpProxy {
    /// A proxy on a free loopback port in front of `target`, passing bytes at once.
    pub fn start(target: SocketAddr) -> TcpProxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("tcp-proxy")
            .enable_all()
            .build()
            .expect("the proxy's runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener).unwrap()
        };
        let state: Arc<Mutex<State>> = Arc::default();
        runtime.spawn(accept(listener, target, state.clone()));
        TcpProxy {
            addr,
            state,
            runtime: Some(runtime),
        }
    }

    /// Where clients connect: `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every open connection at once, both halves, and refuses new ones (accepted,
    /// then closed at once) until [`TcpProxy::heal`]. When it returns, each client has been
    /// sent the end of its stream, and so has the target for each connection; what either
    /// sends later is answered with a reset.
    pub fn cut(&self) {
        let mut state = self.lock();
        state.cut = true;
        for (_, sockets) in state.open.drain() {
            sockets.shut_down();
        }
    }

    /// Passes new connections on again.
    pub fn heal(&self) {
        self.lock().cut = false;
    }

    /// How many connections are open through it now.
    pub fn connections(&self) -> usize {
        self.lock().open.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
        if let Some(runtime) = self.runtime.take() {
            // Not waiting for its tasks: it may be dropped inside the test's runtime.
            runtime.shutdown_background();
        }
    }
}

async fn accept(listener: TcpListener, target: SocketAddr, state: Arc<Mutex<State>>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of descriptors, say: not a busy loop meanwhile.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        // Closed with a reset rather than an orderly end, as a failing network would.
        let _ = client.set_zero_linger();
        let Ok(copy) = client.as_fd().try_clone_to_owned() else {
            continue;
        };
        let id = {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            if state.cut {
                continue; // `client` is dropped: closed at once.
            }
            state.next_id += 1;
            let id = state.next_id;
            let sockets = Sockets {
                client: copy.into(),
                target: None,
            };
            state.open.insert(id, sockets);
            id
        };
        tokio::spawn(pass_on(id, client, target, state.clone()));
    }
}

/// Copies between `client` and a new connection to `target` until either ends or the proxy
/// cuts them.
async fn pass_on(id: u64, mut client: TcpStream, target: SocketAddr, state: Arc<Mutex<State>>) {
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(mut upstream) = TcpStream::connect(target).await {
        let _ = upstream.set_zero_linger();
        let _ = upstream.set_nodelay(true);
        let _ = client.set_nodelay(true);
        let registered = match upstream.as_fd().try_clone_to_owned() {
            // Gone from the open ones: cut while connecting.
            Ok(copy) => lock()
                .open
                .get_mut(&id)
                .map(|sockets| sockets.target = Some(copy.into()))
                .is_some(),
            Err(_) => false,
        };
        if registered {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
    }
    lock().open.remove(&id);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// An echo server: each connection gets back what it sends.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut read, mut write) = socket.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        addr
    }

    async fn round_trip(stream: &mut TcpStream, bytes: &[u8]) {
        stream.write_all(bytes).await.unwrap();
        let mut back = vec![0; bytes.len()];
        tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut back))
            .await
            .expect("an answer in time")
            .unwrap();
        assert_eq!(back, bytes);
    }

    /// The stream ends (end of file, or an error such as a reset) within 5 s.
    async fn ends(stream: &mut TcpStream) {
        let mut buf = [0; 16];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("the stream ends in time");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }

    async fn connections_become(proxy: &TcpProxy, n: usize) {
        crate::wait_for(
            "the proxy's connections",
            Duration::from_secs(5),
            || async { (proxy.connections() == n).then_some(()) },
        )
        .await;
    }

    #[tokio::test]
    async fn passes_bytes_cuts_every_connection_and_heals() {
        let proxy = TcpProxy::start(echo().await);
        let mut a = TcpStream::connect(proxy.addr()).await.unwrap();
        let mut b = TcpStream::connect(proxy.addr()).await.unwrap();
        round_trip(&mut a, b"hello").await;
        round_trip(&mut b, &[7; 100_000]).await;
        connections_become(&proxy, 2).await;

        proxy.cut();
        assert_eq!(proxy.connections(), 0);
        ends(&mut a).await;
        ends(&mut b).await;
        // A new connection is accepted (by the kernel) and closed at once.
        let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
        ends(&mut c).await;
        assert_eq!(proxy.connections(), 0);

        proxy.heal();
        let mut d = TcpStream::connect(proxy.addr()).await.unwrap();
        round_trip(&mut d, b"again").await;
        connections_become(&proxy, 1).await;
        drop(d);
        connections_become(&proxy, 0).await;
    }

    /// The target's side goes too: a connection there sees its end once cut.
    #[tokio::test]
    async fn a_cut_ends_the_targets_side_as_well() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = TcpProxy::start(listener.local_addr().unwrap());
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(b"x").await.unwrap();
        let (mut server_side, _) = listener.accept().await.unwrap();
        let mut x = [0; 1];
        server_side.read_exact(&mut x).await.unwrap();
        proxy.cut();
        ends(&mut server_side).await;
        ends(&mut client).await;
    }
}
