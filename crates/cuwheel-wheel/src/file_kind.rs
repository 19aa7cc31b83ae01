//! What a file type is, in words: for errors about a path that is not
//! the regular file it must be (a wheel's member, a file cuwheel reads).
//!
//! In: a [`FileType`]. Out: `a FIFO (named pipe)`, `a symbolic link`, ….

use std::fs::FileType;
use std::os::unix::fs::FileTypeExt as _;

/// What a file type is, in words (`a FIFO (named pipe)`).
pub fn kind(file_type: FileType) -> &'static str {
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}
