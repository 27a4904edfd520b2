// Queen dashboard (adapters/dashboard/doc.go): fetches the page's server-rendered
// fragment with the Bearer token when one is held, refreshes the overview, follows
// in-page links and filters, and runs the row actions through the JSON API.
(function () {
  'use strict';

  var TOKEN = 'queen.token'; // sessionStorage only: the token leaves with the tab
  var page, flash, seq = 0, paused = false;

  function token() {
    try { return sessionStorage.getItem(TOKEN) || ''; } catch (e) { return ''; }
  }

  function headers(extra) {
    var h = extra || {};
    var t = token();
    if (t) { h.Authorization = 'Bearer ' + t; }
    return h;
  }

  function say(text, kind) {
    flash.textContent = text;
    flash.dataset.kind = kind || 'info';
  }

  async function errorText(res) {
    try {
      var body = await res.json();
      if (body && body.error) { return body.error + ' (HTTP ' + res.status + ')'; }
    } catch (e) { /* not JSON */ }
    return 'HTTP ' + res.status;
  }

  // fragmentURL is the fragment of this page with the page's own query.
  function fragmentURL() {
    var u = new URL(page.dataset.src, location.origin);
    new URLSearchParams(location.search).forEach(function (v, k) { u.searchParams.set(k, v); });
    return u.pathname + u.search;
  }

  function openDetails() {
    var open = [];
    page.querySelectorAll('details').forEach(function (d, i) { if (d.open) { open.push(i); } });
    return open;
  }

  // load fetches the fragment and swaps it in; a newer load wins over an older one.
  async function load() {
    var mine = ++seq;
    page.dataset.loaded = 'false';
    page.setAttribute('aria-busy', 'true');
    var res;
    try {
      res = await fetch(fragmentURL(), { headers: headers(), cache: 'no-store', credentials: 'same-origin' });
    } catch (e) {
      if (mine === seq) { page.removeAttribute('aria-busy'); say('The broker did not answer: ' + e.message, 'error'); }
      return;
    }
    if (mine !== seq) { return; }
    if (res.status === 401) {
      // What an earlier token showed is not left on the page.
      page.removeAttribute('aria-busy');
      page.replaceChildren();
      showLogin();
      return;
    }
    if (res.status === 403) {
      page.removeAttribute('aria-busy');
      page.replaceChildren();
      say('Not allowed: this token may not read this page.', 'error');
      return;
    }
    if (!res.ok) {
      var msg = await errorText(res);
      if (mine !== seq) { return; }
      page.removeAttribute('aria-busy');
      var p = document.createElement('p');
      p.className = 'error';
      p.setAttribute('role', 'alert');
      p.textContent = 'This page could not be shown: ' + msg;
      page.replaceChildren(p);
      page.dataset.loaded = 'error';
      return;
    }
    var html = await res.text();
    if (mine !== seq) { return; }
    var open = openDetails();
    hideLogin();
    page.innerHTML = html;
    var all = page.querySelectorAll('details');
    open.forEach(function (i) { if (all[i]) { all[i].open = true; } });
    page.removeAttribute('aria-busy');
    page.dataset.loaded = 'true';
  }

  function loginShown() { return !!document.getElementById('login'); }

  function showLogin() {
    var refused = token() !== '';
    try { sessionStorage.removeItem(TOKEN); } catch (e) { /* unavailable */ }
    updateSignout();
    if (!loginShown()) {
      var auth = document.getElementById('auth');
      auth.innerHTML = '<form id="login"><h2>Sign in</h2>' +
        '<p>This broker asks for a token (JWT). It is kept in this tab only.</p>' +
        '<label for="token">Bearer token</label> ' +
        '<input id="token" name="token" type="password" autocomplete="off" required> ' +
        '<button type="submit">Sign in</button></form>';
      document.getElementById('login').addEventListener('submit', function (ev) {
        ev.preventDefault();
        // A token copied with its scheme ("Bearer eyJ...") is kept without it: the
        // requests add the scheme themselves.
        var v = document.getElementById('token').value.trim().replace(/^bearer\s+/i, '');
        if (!v) { return; }
        try { sessionStorage.setItem(TOKEN, v); } catch (e) { say('This browser keeps no session storage.', 'error'); return; }
        hideLogin();
        updateSignout();
        say('Signed in.');
        load();
      });
    }
    say(refused ? 'The token was refused: sign in again.' : 'Sign in with a token to see this page.', 'error');
    document.getElementById('token').focus();
  }

  function hideLogin() { document.getElementById('auth').replaceChildren(); }

  function updateSignout() {
    var b = document.getElementById('signout');
    if (b) { b.hidden = token() === ''; }
  }

  function enc(s) { return encodeURIComponent(s); }

  function groupBase(d) {
    return '/api/v1/consumer-groups/' + enc(d.group) + '/queues/' + enc(d.queue);
  }

  function messagePath(d) {
    return '/api/v1/messages/' + enc(d.partitionId) + '/' + enc(d.transactionId);
  }

  // actions map a button's data-action, with the data of its row and of itself, to an
  // API call: method, url, body, the confirmation destructive ones ask, the outcome.
  var actions = {
    'delete-queue': function (d) {
      return { method: 'DELETE', url: '/api/v1/resources/queues/' + enc(d.queue),
        confirm: 'Delete queue "' + d.queue + '" with its partitions, messages, consumer positions and dead letters? This cannot be undone.',
        done: 'Queue "' + d.queue + '" deleted.', gone: { href: '/ui/queues', label: 'All queues' } };
    },
    'seek-end': function (d) {
      return { method: 'POST', url: groupBase(d) + '/seek', body: { toEnd: true },
        done: 'Group "' + d.group + '" moved to the end of "' + d.queue + '".' };
    },
    'seek-time': function (d, row) {
      var input = row && row.querySelector('[data-role="seek-time"]');
      var when = input && input.value ? new Date(input.value) : null;
      if (!when || isNaN(when.getTime())) { say('Choose a time to seek to first.', 'error'); if (input) { input.focus(); } return null; }
      return { method: 'POST', url: groupBase(d) + '/seek', body: { timestamp: when.toISOString() },
        done: 'Group "' + d.group + '" moved to ' + when.toISOString() + ' on "' + d.queue + '".' };
    },
    'skip': function (d) {
      return { method: 'POST', url: groupBase(d) + '/partitions/' + enc(d.partition) + '/seek', body: { toEnd: true },
        done: 'Group "' + d.group + '" skipped to the end of partition "' + d.partition + '".' };
    },
    'delete': function (d) {
      if (d.kind === 'group') {
        return { method: 'DELETE', url: groupBase(d),
          confirm: 'Delete consumer group "' + d.group + '" on queue "' + d.queue + '"? Its positions are lost.',
          done: 'Group "' + d.group + '" deleted on "' + d.queue + '".' };
      }
      return { method: 'DELETE', url: messagePath(d),
        confirm: 'Delete the dead letter of message "' + d.transactionId + '"? This cannot be undone.',
        done: 'Dead letter of "' + d.transactionId + '" deleted.' };
    },
    'replay': function (d) {
      return { method: 'POST', url: '/api/v1/dlq/' + enc(d.dlqId) + '/replay',
        done: 'Dead letter replayed into "' + d.queue + '".' };
    },
    'retry': function (d) {
      return { method: 'POST', url: messagePath(d) + '/retry', done: 'Message "' + d.transactionId + '" retried.' };
    },
    'maintenance-push': function (d) {
      return { method: 'POST', url: '/api/v1/system/maintenance', body: { enabled: d.enabled === 'true' },
        done: 'Push maintenance turned ' + (d.enabled === 'true' ? 'on.' : 'off.') };
    },
    'maintenance-pop': function (d) {
      return { method: 'POST', url: '/api/v1/system/maintenance/pop', body: { enabled: d.enabled === 'true' },
        done: 'Pop maintenance turned ' + (d.enabled === 'true' ? 'on.' : 'off.') };
    }
  };

  // confirmAction opens the confirmation dialog; it resolves true only on #confirm-ok.
  function confirmAction(text) {
    return new Promise(function (resolve) {
      var dlg = document.getElementById('confirm');
      document.getElementById('confirm-text').textContent = text;
      dlg.returnValue = '';
      dlg.addEventListener('close', function () { resolve(dlg.returnValue === 'ok'); }, { once: true });
      dlg.showModal();
    });
  }

  async function act(button) {
    var row = button.closest('[data-kind]');
    var d = Object.assign({}, row ? row.dataset : {}, button.dataset);
    var make = actions[button.dataset.action];
    if (!make) { return; }
    var call = make(d, row);
    if (!call) { return; }
    if (call.confirm && !(await confirmAction(call.confirm))) { say('Cancelled.'); return; }
    button.disabled = true;
    var res;
    try {
      var init = { method: call.method, headers: headers(), credentials: 'same-origin' };
      if (call.body) {
        init.headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(call.body);
      }
      res = await fetch(call.url, init);
    } catch (e) {
      button.disabled = false;
      say('The broker did not answer: ' + e.message, 'error');
      return;
    }
    button.disabled = false;
    if (res.status === 401) { showLogin(); return; }
    if (res.status === 403) { say('Not allowed: ' + (await errorText(res)), 'error'); return; }
    if (!res.ok) { say('Failed: ' + (await errorText(res)), 'error'); return; }
    say(call.done, 'ok');
    if (call.gone) {
      // The page showed what is gone now: say so in its place, with the way back.
      seq++; // a load in flight would show the queue again, or its 404
      var p = document.createElement('p');
      var a = document.createElement('a');
      p.textContent = call.done + ' ';
      a.href = call.gone.href;
      a.textContent = call.gone.label;
      p.appendChild(a);
      page.replaceChildren(p);
      page.dataset.loaded = 'true';
      return;
    }
    load();
  }

  function onClick(ev) {
    var a = ev.target.closest('a[data-nav]');
    if (a && ev.button === 0 && !ev.ctrlKey && !ev.metaKey && !ev.shiftKey && !ev.altKey) {
      var u = new URL(a.href);
      if (u.origin === location.origin && u.pathname === location.pathname) {
        ev.preventDefault();
        history.pushState(null, '', u.pathname + u.search);
        load();
      }
      return;
    }
    var b = ev.target.closest('button[data-action]');
    if (b && page.contains(b)) { act(b); }
  }

  function onSubmit(ev) {
    var form = ev.target.closest('form[data-filter]');
    if (!form) { return; }
    ev.preventDefault();
    var q = new URLSearchParams();
    new FormData(form).forEach(function (v, k) { if (String(v) !== '') { q.set(k, v); } });
    var path = new URL(form.getAttribute('action') || location.pathname, location.origin).pathname;
    var href = path + (q.toString() ? '?' + q.toString() : '');
    if (path === location.pathname) {
      history.pushState(null, '', href);
      load();
    } else {
      location.assign(href);
    }
  }

  function startRefresh() {
    var b = document.getElementById('refresh');
    if (!b) { return; }
    b.addEventListener('click', function () {
      paused = !paused;
      b.setAttribute('aria-pressed', paused ? 'true' : 'false');
      b.textContent = paused ? 'Resume refresh' : 'Pause refresh';
      say(paused ? 'Refresh paused.' : 'Refresh resumed.');
    });
    var every = parseInt(b.dataset.every, 10) || 5000;
    setInterval(function () {
      var busy = document.getElementById('confirm').open || loginShown();
      if (!paused && !busy && document.visibilityState === 'visible') { load(); }
    }, every);
  }

  function start() {
    page = document.getElementById('page');
    flash = document.getElementById('flash');
    if (!page || !flash) { return; }
    document.addEventListener('click', onClick);
    document.addEventListener('submit', onSubmit);
    window.addEventListener('popstate', load);
    var out = document.getElementById('signout');
    out.addEventListener('click', function () {
      try { sessionStorage.removeItem(TOKEN); } catch (e) { /* unavailable */ }
      updateSignout();
      say('Token forgotten.');
      load();
    });
    updateSignout();
    startRefresh();
    load();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
}());
