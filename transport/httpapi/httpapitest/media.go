package httpapitest

// MediaDir is the media directory the API stores uploads in:
// <MediaDir>/<id>/original.<ext>, and .incoming for uploads in flight.
func (k *Kino) MediaDir() string { return k.mediaDir }
