package feed

import (
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
)

// NumChannels sizes per-channel tables indexed by Channel.
const NumChannels = int(ChannelOther) + 1

var channelNames = [NumChannels]string{"all", "book", "trades", "quotes", "control", "other"}

// String returns the channel's stable lower-case name ("book", "trades", …).
func (c Channel) String() string {
	if int(c) < len(channelNames) {
		return channelNames[c]
	}
	return fmt.Sprintf("channel(%d)", uint8(c))
}

// ParseChannel is the inverse of Channel.String.
func ParseChannel(s string) (Channel, bool) {
	for i, n := range channelNames {
		if n == s {
			return Channel(i), true
		}
	}
	return 0, false
}

// ChannelOf maps a decoded event type to the channel it is routed on.
func ChannelOf(t venue.EventType) Channel {
	switch t {
	case venue.EventSnapshot, venue.EventLevel, venue.EventReject:
		// A rejected message invalidates the books it would have changed.
		return ChannelBook
	case venue.EventTrade:
		return ChannelTrades
	case venue.EventQuote:
		return ChannelQuotes
	}
	return ChannelOther
}

// MarshalText encodes the channel by name, so Keys read well in JSON.
func (c Channel) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (c *Channel) UnmarshalText(b []byte) error {
	v, ok := ParseChannel(string(b))
	if !ok {
		return fmt.Errorf("feed: unknown channel %q", b)
	}
	*c = v
	return nil
}
