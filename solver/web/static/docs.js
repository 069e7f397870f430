// The API's documentation page: reads the server's /openapi.json and renders
// every endpoint (its method, path, summary, description, request body and
// responses) and every schema, with nothing fetched from elsewhere.
"use strict";

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function schemaName(ref) {
  return ref.split("/").pop();
}

// A schema's type in words: "string (at most 200 characters) or null", "SearchRequest", ...
function typeText(schema) {
  if (!schema || Object.keys(schema).length === 0) return "any JSON";
  if (schema.$ref) return schemaName(schema.$ref);
  if (schema.anyOf) return schema.anyOf.map(typeText).join(" or ");
  if (schema.oneOf) return schema.oneOf.map(typeText).join(" or ");
  if (schema.allOf) return schema.allOf.map(typeText).join(" and ");
  if (schema.enum) return "one of " + schema.enum.map((v) => JSON.stringify(v)).join(", ");
  let text = schema.type || "any JSON";
  if (schema.type === "array") text = "array of " + typeText(schema.items || {});
  const limits = [];
  if (schema.minimum !== undefined) limits.push(">= " + schema.minimum);
  if (schema.exclusiveMinimum !== undefined) limits.push("> " + schema.exclusiveMinimum);
  if (schema.maximum !== undefined) limits.push("<= " + schema.maximum);
  if (schema.exclusiveMaximum !== undefined) limits.push("< " + schema.exclusiveMaximum);
  if (schema.minLength !== undefined) limits.push("at least " + schema.minLength + " characters");
  if (schema.maxLength !== undefined) limits.push("at most " + schema.maxLength + " characters");
  if (schema.pattern !== undefined) limits.push("matching " + schema.pattern);
  return limits.length ? text + " (" + limits.join(", ") + ")" : text;
}

// A table of an object schema's fields: name, type, default, description.
function fieldsTable(schema) {
  const table = element("table");
  const head = table.createTHead().insertRow();
  for (const title of ["field", "type", "default", "description"]) head.appendChild(element("th", title));
  const body = table.createTBody();
  const required = new Set(schema.required || []);
  for (const [name, field] of Object.entries(schema.properties || {})) {
    const row = body.insertRow();
    const cell = row.insertCell();
    cell.appendChild(element("code", name));
    if (required.has(name)) cell.appendChild(element("span", " required", "required"));
    row.insertCell().textContent = typeText(field);
    row.insertCell().textContent = field.default === undefined ? "" : JSON.stringify(field.default);
    const words = [field.description || ""];
    if (field.examples && field.examples.length) words.push("Example: " + JSON.stringify(field.examples[0]));
    row.insertCell().textContent = words.filter(Boolean).join(" ");
  }
  return table;
}

function schemaBlock(schema) {
  if (schema && schema.properties) return fieldsTable(schema);
  return element("p", typeText(schema));
}

function endpoint(path, method, operation, schemas) {
  const section = element("section");
  section.id = (method + path).replace(/[^A-Za-z0-9]+/g, "-");
  const title = element("h2");
  title.appendChild(element("span", method.toUpperCase(), "method"));
  title.appendChild(element("span", path, "path"));
  section.appendChild(title);
  if (operation.summary) section.appendChild(element("p", operation.summary));
  if (operation.description) section.appendChild(element("p", operation.description, "description"));
  if (operation.parameters && operation.parameters.length) {
    section.appendChild(element("h3", "Parameters"));
    const table = element("table");
    const body = table.createTBody();
    for (const parameter of operation.parameters) {
      const row = body.insertRow();
      row.insertCell().appendChild(element("code", parameter.name));
      row.insertCell().textContent = parameter.in;
      row.insertCell().textContent = typeText(parameter.schema);
      row.insertCell().textContent = parameter.description || "";
    }
    section.appendChild(table);
  }
  const request = operation.requestBody;
  if (request && request.content) {
    for (const [media, content] of Object.entries(request.content)) {
      section.appendChild(element("h3", "Request body (" + media + "): " + typeText(content.schema)));
      const named = content.schema && content.schema.$ref ? schemas[schemaName(content.schema.$ref)] : content.schema;
      if (named && named.properties) section.appendChild(fieldsTable(named));
    }
  }
  section.appendChild(element("h3", "Responses"));
  const list = element("ul");
  for (const [code, response] of Object.entries(operation.responses || {})) {
    let text = code + ": " + (response.description || "");
    for (const content of Object.values(response.content || {})) {
      if (content.schema && Object.keys(content.schema).length) text += " (" + typeText(content.schema) + ")";
    }
    list.appendChild(element("li", text));
  }
  section.appendChild(list);
  return section;
}

function render(api) {
  const info = api.info || {};
  document.getElementById("title").textContent = (info.title || "API") + ": the API";
  document.title = document.getElementById("title").textContent;
  document.getElementById("version").textContent = info.version ? "version " + info.version : "";
  document.getElementById("description").textContent = info.description || "";
  const schemas = (api.components && api.components.schemas) || {};
  const contents = document.getElementById("contents");
  const endpoints = document.getElementById("endpoints");
  for (const [path, methods] of Object.entries(api.paths || {})) {
    for (const [method, operation] of Object.entries(methods)) {
      const section = endpoint(path, method, operation, schemas);
      endpoints.appendChild(section);
      const link = element("a", method.toUpperCase() + " " + path);
      link.href = "#" + section.id;
      contents.appendChild(link);
    }
  }
  document.getElementById("schemas-title").hidden = Object.keys(schemas).length === 0;
  const holder = document.getElementById("schemas");
  for (const [name, schema] of Object.entries(schemas)) {
    const section = element("section");
    section.id = "schema-" + name;
    section.appendChild(element("h2", name, "path"));
    if (schema.description) section.appendChild(element("p", schema.description, "description"));
    section.appendChild(schemaBlock(schema));
    holder.appendChild(section);
  }
}

async function load() {
  const status = document.getElementById("status");
  try {
    const response = await fetch("/openapi.json");
    if (!response.ok) throw new Error("the server answered " + response.status);
    render(await response.json());
    status.hidden = true;
  } catch (error) {
    status.dataset.state = "error";
    status.textContent = "Cannot read /openapi.json: " + error.message;
  }
}

load();
