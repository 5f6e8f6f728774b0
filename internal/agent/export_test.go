package agent

// TreatEveryRunAsYoung makes a broken ping connection unable to tell any run from a
// restart by its start, as it is within a server's first seconds, until restore.
func TreatEveryRunAsYoung() (restore func()) {
	was := youngRunSeconds
	youngRunSeconds = 1 << 40
	return func() { youngRunSeconds = was }
}
