package linux

// NewCopySealed is New with the init's binary always a sealed memfd copy,
// the path of a broker that may not mount, so tests run it as root too.
func NewCopySealed(o *Options) (*Backend, error) {
	sealCopyOnly.Store(true)
	defer sealCopyOnly.Store(false)
	return New(o)
}
