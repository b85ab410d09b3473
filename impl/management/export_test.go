package management

// ListViewVersion is listViewVersion, for the external tests.
const ListViewVersion = listViewVersion
