// Package dashboard is queen-server's web dashboard: server-rendered HTML over the core
// admin use cases, with no JavaScript build chain. Pages are html/template shells and
// fragments; charts are inline SVG drawn here (chart.go); one hand-written script
// (assets/app.js) fetches the fragments, refreshes the overview and runs the actions;
// one stylesheet. Templates and assets are embedded (embed.FS).
//
// # URL layout
//
//	GET /                       overview shell   (public, no data)
//	GET /ui/queues              queues shell     (public)
//	GET /ui/queues/{name}       one queue's shell (public; the name may hold "/")
//	GET /ui/groups, /ui/messages, /ui/dlq, /ui/traces, /ui/system   shells (public)
//	GET /ui/assets/{file}       app.js, app.css  (public; anything else, ".." included: 404)
//	GET /ui/fragments/{page}    the data, as HTML (READ_ONLY)
//
// Fragments: overview (range=1h|6h|24h|7d), queues (sort=name|partitions|total|backlog|
// processing|dlq|lag, dir=asc|desc, offset), queue (name, range, offset of its
// partitions), groups (group, queue, sort=name|lag, offset of the pairs, poffset of the
// partitions), messages (queue, partition, status, window=1h|6h|24h|7d|30d, offset; or
// partitionId and transactionId for one message), dlq (queue, group, offset), traces
// (name, or partitionId and transactionId, offset), system. A shell's script asks its
// fragment with the shell's own query string, so every view is a link.
//
// The charts, the queues' rates, the brokers and PostgreSQL's statistics come from the
// analytics use case (core/admin Analytics, the metrics history); without it the pages
// show the current counts (and the backlog chart its current value alone). The chart
// renderer takes plain series (activityCharts over TrendPoints), whatever read them.
//
// The Handler serves every route itself and is mounted by the HTTP API's router at the
// templates Routes lists, each with its access level: the API's authentication runs
// first and puts the caller's principal in the context (core/auth), which the fragments
// read to render only the actions the role may take. Without a principal (authentication
// off) every action is shown.
//
// # Invariants
//
//   - Shells and assets carry no data; every figure comes through a fragment, behind
//     authentication. Fragments answer Cache-Control: no-store and Vary: Authorization.
//   - Every table is a server-side page (Options.PageSize rows, 50); sorting or
//     filtering a listing reads at most maxScan (10,000) of its rows; chart series are
//     bounded to MaxPoints (360). 1,000 queues or 100,000 partitions cost the browser
//     one page.
//   - The dashboard changes nothing itself: actions are calls of the JSON API from the
//     browser, with the token, checked by the API like any client's.
//   - Templates parse and assets load in New: a broken one stops start-up.
//   - Bad parameters answer 400 {"error": ...} naming the parameter; an unknown
//     fragment or asset 404 {"error":"Not Found","code":"no_such_route"}, as the API.
//   - Accessibility: tables with <th scope>, a <label> on every control, actions are
//     <button>s, every colour comes with text (states, chart legends and dash patterns,
//     and each chart's data table).
//
// # DOM contract (the browser tests rely on it)
//
//   - Every shell has <main id="page" data-page="<page>" data-src="<fragment URL>">;
//     the script sets data-loaded="false" while it fetches and "true" once the fragment
//     is swapped in ("error" when the fragment answered an error, shown in #page).
//   - Token: on a 401 the script shows <form id="login"> (inside #auth) with
//     <label for="token">, <input id="token" type="password"> and a submit button; the
//     token is kept in sessionStorage "queen.token" only, and dropped when refused.
//   - Actions are <button data-action="..."> inside an element with data-kind (a row);
//     the row's data-* attributes say what they act on. A fragment renders only the
//     actions the role may take: READ_WRITE for seek-end, seek-time, skip, replay,
//     retry and dead-letter delete; ADMIN for delete-queue, group delete and the
//     maintenance switches.
//   - Deletions (delete, delete-queue) open <dialog id="confirm"> and do nothing before
//     #confirm-ok is clicked (#confirm-cancel or Escape cancels). Seeks, skips, replays,
//     retries and the maintenance switches run at once.
//   - The outcome of every action is written to <div id="flash" role="status">; a 403
//     says "Not allowed".
//   - Overview: <svg data-chart="throughput" data-total="<messages pushed in the
//     range>">, and "backlog", "lag", "errors" charts; ranges are links
//     <a data-range="1h|6h|24h|7d">. The overview refreshes every 5 s; the
//     <button id="refresh" aria-pressed> pauses and resumes it.
//   - Queues table: sort links <a data-sort="<key>"> in the column headings; rows
//     <tr data-queue="q">.
//   - Queue page: <button data-action="delete-queue" data-queue="q">.
//   - Groups page: rows <tr data-kind="group" data-group="g" data-queue="q"> with
//     seek-end, <input type="datetime-local" data-role="seek-time"> + seek-time, and
//     delete; partition rows <tr data-kind="partition" data-group data-queue
//     data-partition> with skip (a seek of that partition to its end).
//   - Dead letters: rows <tr data-kind="dead-letter" data-dlq-id="<id>" data-queue="q"
//     data-partition-id data-transaction-id> with replay and delete.
//   - Messages: rows <tr data-kind="message" data-queue data-partition-id
//     data-transaction-id>; retry and delete on dead-lettered ones.
//   - System: <tr data-kind="maintenance" data-switch="push|pop"> with
//     maintenance-push / maintenance-pop buttons whose data-enabled is the state they
//     set.
//   - Links that stay on the page (paging, sorting, ranges, filters) carry data-nav or
//     are <form data-filter>: the script follows them without reloading the shell.
package dashboard
