package replayer

import "github.com/tapedeck/tapedeck/feed"

// The subscriber types live in package feed, shared with live capture; these
// aliases keep replayer.Event, replayer.Key and replayer.Subscriber the names
// replay users write.
type (
	// Channel selects events by what they carry.
	Channel = feed.Channel
	// Key routes events to a subscriber.
	Key = feed.Key
	// Event is what a subscriber receives.
	Event = feed.Event
	// Subscriber receives routed events.
	Subscriber = feed.Subscriber
	// SubscriberFunc adapts a function to Subscriber.
	SubscriberFunc = feed.SubscriberFunc
)

// Channels, as in package feed.
const (
	ChannelAll     = feed.ChannelAll
	ChannelBook    = feed.ChannelBook
	ChannelTrades  = feed.ChannelTrades
	ChannelQuotes  = feed.ChannelQuotes
	ChannelControl = feed.ChannelControl
	ChannelOther   = feed.ChannelOther
)
