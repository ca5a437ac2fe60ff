package discovery

// SharedSessionKeys returns the keys of the open shared ZooKeeper watches.
func SharedSessionKeys() []string {
	zkSharedMu.Lock()
	defer zkSharedMu.Unlock()
	keys := make([]string, 0, len(zkShared))
	for k := range zkShared {
		keys = append(keys, k)
	}
	return keys
}
