package discovery

// SharedSessions reports how many shared ZooKeeper watches are open.
func SharedSessions() int {
	zkSharedMu.Lock()
	defer zkSharedMu.Unlock()
	return len(zkShared)
}
