package apiclient

import (
	"context"
	"time"
)

// SetSleep replaces the wait between retries: tests make the server's
// clock jump instead of waiting.
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }
