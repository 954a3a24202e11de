//! The agent says when it is open: `POST /record` starts recordings, so
//! serving it without authentication beyond the machine itself is worth a
//! warning at start (issue 47).
use std::net::SocketAddr;

/// The warning for `addr` (the bound address), or `None` when `POST /record`
/// is off, clients must authenticate (basic auth, or TLS requiring a client
/// certificate), or only this machine can reach it.
pub fn open_record_warning(addr: SocketAddr, record_enabled: bool, authenticated: bool) -> Option<String> {
    let ip = addr.ip().to_canonical();
    if !record_enabled || authenticated || ip.is_loopback() {
        return None;
    }
    let every = if ip.is_unspecified() { " (every interface)" } else { "" };
    Some(format!(
        "tracer agent: warning: POST /record is served without authentication on {addr}{every}: anyone who reaches it can start recordings; set basic_auth_users (or client_auth_type RequireAndVerifyClientCert) in --web.config.file, or listen on 127.0.0.1"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warn(addr: &str, record: bool, auth: bool) -> Option<String> {
        open_record_warning(addr.parse().unwrap(), record, auth)
    }

    #[test]
    fn only_an_unauthenticated_record_beyond_loopback_is_warned_of() {
        assert_eq!(
            warn("[::]:9400", true, false).as_deref(),
            Some(
                "tracer agent: warning: POST /record is served without authentication on [::]:9400 (every interface): anyone who reaches it can start recordings; set basic_auth_users (or client_auth_type RequireAndVerifyClientCert) in --web.config.file, or listen on 127.0.0.1"
            )
        );
        assert_eq!(
            warn("0.0.0.0:9400", true, false).as_deref(),
            Some(
                "tracer agent: warning: POST /record is served without authentication on 0.0.0.0:9400 (every interface): anyone who reaches it can start recordings; set basic_auth_users (or client_auth_type RequireAndVerifyClientCert) in --web.config.file, or listen on 127.0.0.1"
            )
        );
        assert_eq!(
            warn("10.1.2.3:9400", true, false).as_deref(),
            Some(
                "tracer agent: warning: POST /record is served without authentication on 10.1.2.3:9400: anyone who reaches it can start recordings; set basic_auth_users (or client_auth_type RequireAndVerifyClientCert) in --web.config.file, or listen on 127.0.0.1"
            )
        );
        for quiet in [
            warn("[::]:9400", false, false),              // no POST /record
            warn("[::]:9400", true, true),                // basic auth or required client certificates
            warn("127.0.0.1:9400", true, false),          // loopback
            warn("127.1.2.3:9400", true, false),          // all of 127/8
            warn("[::1]:9400", true, false),              // IPv6 loopback
            warn("[::ffff:127.0.0.1]:9400", true, false), // IPv4 loopback, mapped
        ] {
            assert_eq!(quiet, None);
        }
    }
}
