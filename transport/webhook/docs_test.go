package webhook

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryDeliveryError: docs/webhooks.md quotes each fixed
// wording of a failed attempt word for word, so a receiver's owner can
// match what the deliveries log shows.
func TestDocsListEveryDeliveryError(t *testing.T) {
	raw, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, msg := range []string{
		msgRefusedAddress, msgNoSuchHost, msgDNS, msgRefused, msgReset, msgUnreachable, msgClosed,
		msgUnknownCA, msgWrongHost, msgBadCert, msgNotTLS, msgTLS, msgBadAnswer, msgUnreachableAny,
		"no answer from the receiver within the 10s timeout", "HTTP 302 (redirects are not followed)",
		"gave up: the last attempt was interrupted",
	} {
		if !strings.Contains(doc, "`"+msg+"`") {
			t.Errorf("docs/webhooks.md does not quote %q", msg)
		}
	}
}
