{% raw %}
// The console's writes: fetch() to the platform's REST API with the page's OAuth token in the
// Authorization header (the service honours its cookie for GET only, so a cross-site form post
// can never write). Replies are shown with textContent: nothing from the API becomes HTML.
(function () {
  const cfg = window.ytConsole;
  async function api(method, path, body) {
    const init = { method: method, credentials: 'omit', headers: { Authorization: 'token ' + cfg.token } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const r = await fetch(cfg.api + path, init);
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (!r.ok) {
      const detail = data && data.detail;
      throw new Error(typeof detail === 'string' ? detail : (detail ? JSON.stringify(detail) : 'HTTP ' + r.status));
    }
    return data;
  }
  function amounts(form, part) {
    const out = {};
    form.querySelectorAll('input[data-part="' + part + '"]').forEach(function (i) {
      const v = i.value.trim();
      if (v) { out[i.dataset.resource] = v; }
    });
    return out;
  }
  function list(text) { return text.split(',').map(function (s) { return s.trim(); }).filter(Boolean); }
  function value(form, name) { const el = form.elements.namedItem(name); return el ? el.value.trim() : ''; }
  function checked(form, name) {
    return Array.from(form.querySelectorAll('input[name="' + name + '"]:checked')).map(function (i) { return i.value; });
  }
  function vcBody(form, creating) {
    const body = {
      description: value(form, 'description'),
      quota: amounts(form, 'quota'),
      user_caps: amounts(form, 'user_caps'),
      groups: list(value(form, 'groups')),
      profiles: checked(form, 'profiles'),
      idle_timeout: minutes(value(form, 'idle_minutes')),
      storage_quota: value(form, 'storage_quota') || null,
    };
    if (creating) { body.name = value(form, 'name'); }
    return body;
  }
  // minutes typed -> whole seconds; empty: null (the hub's policy); anything else goes as typed (a 422 says why)
  function minutes(text) {
    if (!text) { return null; }
    const n = Number(text);
    return Number.isFinite(n) && n > 0 ? Math.round(n * 60) : text;
  }
  function profileBody(form, creating) {
    const type = value(form, 'accelerator_type');
    const body = {
      display_name: value(form, 'display_name'),
      description: value(form, 'description'),
      image: value(form, 'image'),
      kernel: value(form, 'kernel'),
      cpu: value(form, 'cpu'),
      memory: value(form, 'memory'),
      accelerator: type ? { type: type, count: Number(value(form, 'accelerator_count') || '1') } : null,
      arch: value(form, 'arch') || null,
    };
    if (creating) { body.name = value(form, 'name'); }
    return body;
  }
  const actions = {
    'vc-create': function (f) { return api('POST', 'vcs', vcBody(f, true)); },
    'vc-edit': function (f) { return api('PATCH', 'vcs/' + encodeURIComponent(f.dataset.name), vcBody(f, false)); },
    'vc-delete': function (f) { return api('DELETE', 'vcs/' + encodeURIComponent(f.dataset.name)); },
    'profile-create': function (f) { return api('POST', 'profiles', profileBody(f, true)); },
    'profile-edit': function (f) { return api('PATCH', 'profiles/' + encodeURIComponent(f.dataset.name), profileBody(f, false)); },
    'profile-delete': function (f) { return api('DELETE', 'profiles/' + encodeURIComponent(f.dataset.name)); },
    // the hub user, the password (empty: generated, shown here once) and the VCs' groups
    'person-add': async function (f) {
      const body = { name: value(f, 'name'), vcs: checked(f, 'vcs'), groups: list(value(f, 'groups')), password: value(f, 'password') || null };
      const d = await api('POST', 'people', body);
      const where = d.groups.length ? ' in group' + (d.groups.length > 1 ? 's ' : ' ') + d.groups.join(', ') : ' in no group';
      const made = d.created ? ' is now a hub user' : ' was already a hub user (new password)';
      return { text: d.name + made + where + (d.password ? '. Password (shown only this once): ' + d.password : '.') };
    },
  };
  document.querySelectorAll('form[data-yt]').forEach(function (form) {
    form.addEventListener('submit', async function (ev) {
      ev.preventDefault();
      const out = form.querySelector('.yt-result');
      out.className = 'yt-result alert alert-info';
      out.textContent = 'saving...';
      try {
        const done = await actions[form.dataset.yt](form);
        out.className = 'yt-result alert alert-success';
        out.textContent = (done && typeof done.text === 'string') ? done.text : 'saved';
        if (form.dataset.next) {
          const name = value(form, 'name') || form.dataset.name;
          window.location.assign(form.dataset.next.replace('__NAME__', encodeURIComponent(name)));
        }
      } catch (e) {
        out.className = 'yt-result alert alert-danger';
        out.textContent = e.message;
      }
    });
  });
  window.ytApi = api;
})();
{% endraw %}
