package ranchersim

// ClearNodeFaults removes every fault AddNodeFault injected: the nodes
// behave from the next read on (an agent that reaches Rancher again).
func (s *Server) ClearNodeFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prov.nodeFaults = nil
}
