//! The settings of both ends: what courier advertises, and what the server
//! last said (RFC 9113 §6.5.2).

/// The settings courier advertises.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Local {
    pub(crate) stream_window: u32,
    pub(crate) conn_window: u32,
    pub(crate) max_header_list: usize,
}

/// The server's settings, as last received.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer {
    pub(crate) max_frame: u32,
    pub(crate) initial_window: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: `None` until the server says one
    /// (unlimited, RFC 9113 §6.5.2).
    pub(crate) max_header_list: Option<u32>,
    /// The server sent SETTINGS_ENABLE_CONNECT_PROTOCOL 1 (RFC 8441).
    pub(crate) connect_protocol: bool,
}
