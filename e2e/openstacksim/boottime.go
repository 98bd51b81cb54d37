package openstacksim

// bootDue says whether a server in BUILD may boot now as far as the
// clock goes: Options.BootAfter after its create. A real VM takes tens of
// seconds from Nova's create to a running cloud-init whether anyone looks
// at it or not, which polls (Options.BuildPolls) cannot show; a create's
// wall time against the simulator then includes a boot as long as a
// cloud's. Without BootAfter only the polls count.
func (s *Server) bootDue(sv *Instance) bool {
	return s.opts.BootAfter <= 0 || !s.now().Before(sv.Created.Add(s.opts.BootAfter))
}
