//! Small file systems of their own, to fill up (mounting needs root, as CI runs).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of `mib` MiB mounted at a fresh directory, unmounted when dropped.
pub struct SmallDisk(pub PathBuf);

impl SmallDisk {
    pub fn mount(mib: u32) -> Self {
        let dir = std::env::temp_dir().join(format!("boomerang-disk-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let size = format!("size={mib}m");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &size, "tmpfs"])
            .arg(&dir)
            .status()
            .expect("run mount");
        assert!(status.success(), "mounting a tmpfs needs root (as CI runs)");
        Self(dir)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Writes `path` until the file system is full.
pub fn fill(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    let block = vec![7u8; 1 << 20];
    while file.write_all(&block).is_ok() {}
    // The last blocks, smaller than a MiB.
    let byte = [7u8];
    while file.write_all(&byte).is_ok() {}
    let _ = file.sync_all();
}
