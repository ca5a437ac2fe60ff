// Package pool holds zkpresto's connections to coordinators: the Dialer
// (time limits of its own, the bytes written on each connection), the
// InlineTransport and its limits (the gateway's HTTP/1 transport), the
// peek at an idle connection before it is reused, and the Exchange, the
// record of one statement's requests to one coordinator: whether a byte
// of its submission may have been written, the dial race, the gate of its
// last bytes, its latest follow-up URL.
//
// Submit and FollowUp send a statement's requests and apply the protocol's
// rules (package wire) to the answers: a refusal is not sent, a redirect
// is never followed, a cut page is retried where the protocol allows it.
// The peeks are ordinary system calls made in syscall.RawConn's Control:
// no raw system call, so the runtime's scheduler knows of every one.
package pool
