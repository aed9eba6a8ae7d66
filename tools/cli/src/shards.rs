//! `split` and `merge`: one index file as K column-shard files with a
//! manifest (`bloomslice::persist::manifest`), and back. The split is the
//! library's (`bloomslice::sharded::write_split`, shared with the
//! bindings): a set never straddles files and keeps its id, so the shard
//! files answer as the index did (`bloomslice::sharded::ShardedIndex`,
//! which `query` opens).

use std::path::Path;
use std::time::Duration;

use bloomslice::SetIndex;
use bloomslice::persist::manifest::MANIFEST_FILE;
use bloomslice::persist::{self, Verify};
use bloomslice::sharded;

use crate::CliError;
use crate::files::{lock_index, map_shards};

/// `split`: writes `shards` collection files and `manifest.json` into
/// `out_dir` (created if missing; it must hold no manifest or shard file
/// yet), as [`sharded::write_split`] plans and names them.
pub fn split(index_path: &Path, shards: usize, out_dir: &Path) -> Result<(), CliError> {
    if shards == 0 {
        return Err(CliError::Usage("--shards must be at least 1".into()));
    }
    if crate::files::is_level_file(index_path) {
        return Err(crate::files::level_file_refused(index_path, "`split`"));
    }
    let loaded = persist::load(index_path).map_err(|e| CliError::index_file(index_path, &e))?;
    if loaded.index.len() < shards {
        return Err(CliError::Runtime(format!(
            "{} holds {} sets: it cannot be split into {shards} shards (a set never straddles files)",
            index_path.display(),
            loaded.index.len()
        )));
    }
    let manifest =
        sharded::write_split(&loaded.index, &loaded.names, shards, out_dir).map_err(|e| match e.io_kind() {
            Some(kind) if kind != std::io::ErrorKind::AlreadyExists => {
                CliError::Runtime(format!("{e} (check the directory is writable)"))
            }
            _ => CliError::engine(e),
        })?;
    for f in &manifest.files {
        println!("{}\t{} sets\t{} bytes", out_dir.join(&f.file).display(), f.sets.len(), f.bytes);
    }
    let manifest_path = out_dir.join(MANIFEST_FILE);
    println!("{}\t{} files, {} sets", manifest_path.display(), manifest.files.len(), manifest.set_count());
    Ok(())
}

/// `merge`: the shard files of a manifest back into one collection file
/// (each file's filters as they are, into parts of the same parameters).
pub fn merge(manifest: &Path, output: &Path, force: bool, wait: Duration) -> Result<(), CliError> {
    // Opening checks every file against the manifest (sums, parameters, sets).
    let sharded = map_shards(manifest, Verify::Full)?;
    let m = sharded.manifest();
    let mut merged: Option<SetIndex> = None;
    for (i, shard) in sharded.shards().iter().enumerate() {
        match &mut merged {
            None => merged = Some(shard.index.clone()),
            Some(c) => c.absorb(&shard.index).map_err(|e| CliError::Runtime(format!("{}: {e}", m.files[i].file)))?,
        }
    }
    let collection =
        merged.ok_or_else(|| CliError::Runtime(format!("{} lists no files", sharded.manifest_path().display())))?;
    let lock = lock_index(output, wait)?;
    if !force && output.exists() {
        return Err(CliError::Runtime(format!("{} already exists (pass --force to replace it)", output.display())));
    }
    lock.save(&collection, sharded.names())
        .map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
    println!("{}\t{} sets from {} files", output.display(), sharded.len(), sharded.shard_count());
    Ok(())
}
