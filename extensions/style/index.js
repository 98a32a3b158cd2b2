import './base.css';
import './jobs.css';
import './hpo.css';
