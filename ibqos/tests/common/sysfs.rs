//! A fake `/sys/class` (`infiniband/DEVICE/ports/N/...`, `infiniband_mad/umadN/...`) in a
//! directory, for `ibqos ports` and `ibqos sm` run with IBQOS_SYSFS_ROOT pointing at it.

use std::path::Path;

/// Writes `text` to `root/file`, making its directories; a new file replaces the old by rename,
/// so a reader sees the old contents or the new, never half.
pub fn put(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("{text}\n")).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

/// One port of a fake `/sys/class/infiniband`, built beside the tree and moved in by rename
/// when its device is new, so that a reader never sees the device without its files.
pub struct FakePort<'a> {
    pub device: &'a str,
    pub port: u8,
    /// None: no link_layer file, as on kernels before 3.x (libibumad reads that as InfiniBand).
    pub link_layer: Option<&'a str>,
    pub guid: u64,
    pub state: &'a str,
    pub rate: &'a str,
}

/// Adds a device with `ports` (all of one device) to the tree at `root`.
pub fn add_device(root: &Path, ports: &[FakePort]) {
    let staging = tempfile::tempdir_in(root).unwrap();
    for p in ports {
        let dir = format!("ports/{}", p.port);
        if let Some(layer) = p.link_layer {
            put(staging.path(), &format!("{dir}/link_layer"), layer);
        }
        let g = p.guid;
        let gid = format!(
            "fe80:0000:0000:0000:{:04x}:{:04x}:{:04x}:{:04x}",
            g >> 48,
            (g >> 32) & 0xffff,
            (g >> 16) & 0xffff,
            g & 0xffff
        );
        put(staging.path(), &format!("{dir}/gids/0"), &gid);
        put(staging.path(), &format!("{dir}/state"), p.state);
        put(staging.path(), &format!("{dir}/rate"), p.rate);
        put(staging.path(), &format!("{dir}/lid"), "0x0");
    }
    put(staging.path(), "node_guid", "0002:c903:0000:1000");
    std::fs::create_dir_all(root.join("infiniband")).unwrap();
    std::fs::rename(
        staging.keep(),
        root.join("infiniband").join(ports[0].device),
    )
    .unwrap();
}
