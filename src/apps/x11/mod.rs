//! `app.wish` and `app.bitblt`: X workloads under an Xvfb started by osmeter.
