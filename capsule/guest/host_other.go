//go:build !wasip1

package guest

func call(string, []byte) ([]byte, error) { return nil, ErrNoHost }
